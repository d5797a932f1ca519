#version 450
// logsoftmax_gather with subgroup reductions (see logsoftmax_gather.glsl and reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define REDUCE_SUBGROUP
#include "logsoftmax_gather.glsl"
