#version 450
// sumsquares with shared-memory reductions, reading x as vec4s (see sum.glsl).
#extension GL_GOOGLE_include_directive : require
#define SQUARES
#define VEC4
#include "sum.glsl"
