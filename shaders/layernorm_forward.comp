#version 450
// layernorm_forward with shared-memory reductions (see layernorm_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layernorm_forward.glsl"
