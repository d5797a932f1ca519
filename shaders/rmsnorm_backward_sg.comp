#version 450
// rmsnorm_backward with subgroup reductions (see rmsnorm_backward.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#include "rmsnorm_backward.glsl"
