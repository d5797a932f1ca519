#version 450
// layernorm_backward with subgroup reductions (see layernorm_backward.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#include "layernorm_backward.glsl"
