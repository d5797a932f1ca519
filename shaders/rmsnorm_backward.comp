#version 450
// rmsnorm_backward with shared-memory reductions (see rmsnorm_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_backward.glsl"
