#version 450
// logsoftmax_gather_backward with subgroup reductions (see logsoftmax_gather_backward.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#include "logsoftmax_gather_backward.glsl"
