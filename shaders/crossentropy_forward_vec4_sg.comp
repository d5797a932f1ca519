#version 450
// crossentropy_forward with subgroup reductions, vec4 loads and stores
// (see crossentropy_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#define VEC4
#include "crossentropy_forward.glsl"
