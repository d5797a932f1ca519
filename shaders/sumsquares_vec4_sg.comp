#version 450
// sumsquares with subgroup reductions, reading x as vec4s (see sum.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#define SQUARES
#define VEC4
#include "sum.glsl"
