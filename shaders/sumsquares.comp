#version 450
// sumsquares with shared-memory reductions (see sum.glsl).
#extension GL_GOOGLE_include_directive : require
#define SQUARES
#include "sum.glsl"
