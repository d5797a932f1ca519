#version 450
// layernorm_forward of a residual sum, shared-memory reductions (see layernorm_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define RESIDUAL
#include "layernorm_forward.glsl"
