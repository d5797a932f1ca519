#version 450
// sum with shared-memory reductions (see sum.glsl).
#extension GL_GOOGLE_include_directive : require
#include "sum.glsl"
