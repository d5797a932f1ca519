#version 450
// logsoftmax_gather_backward with shared-memory reductions (see logsoftmax_gather_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "logsoftmax_gather_backward.glsl"
