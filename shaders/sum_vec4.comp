#version 450
// sum with shared-memory reductions, reading x as vec4s (see sum.glsl).
#extension GL_GOOGLE_include_directive : require
#define VEC4
#include "sum.glsl"
