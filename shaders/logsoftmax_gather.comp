#version 450
// logsoftmax_gather with shared-memory reductions (see logsoftmax_gather.glsl).
#extension GL_GOOGLE_include_directive : require
#include "logsoftmax_gather.glsl"
