#version 450
// layernorm_forward of a residual sum, subgroup reductions (see layernorm_forward.glsl and
// reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#define RESIDUAL
#include "layernorm_forward.glsl"
