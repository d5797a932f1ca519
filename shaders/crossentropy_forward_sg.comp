#version 450
// crossentropy_forward with subgroup reductions (see crossentropy_forward.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#include "crossentropy_forward.glsl"
