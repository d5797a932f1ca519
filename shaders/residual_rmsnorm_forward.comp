#version 450
// rmsnorm_forward of a residual sum, shared-memory reductions (see rmsnorm_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define RESIDUAL
#include "rmsnorm_forward.glsl"
