#version 450
// crossentropy_forward fused with its backward, subgroup reductions, vec4 loads and stores
// (see crossentropy_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#define FUSED
#define VEC4
#include "crossentropy_forward.glsl"
