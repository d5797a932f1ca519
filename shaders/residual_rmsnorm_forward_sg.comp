#version 450
// rmsnorm_forward of a residual sum, subgroup reductions (see rmsnorm_forward.glsl and
// reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#define RESIDUAL
#include "rmsnorm_forward.glsl"
