#version 450
// rmsnorm_forward with shared-memory reductions (see rmsnorm_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "rmsnorm_forward.glsl"
