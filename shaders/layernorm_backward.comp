#version 450
// layernorm_backward with shared-memory reductions (see layernorm_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "layernorm_backward.glsl"
