#version 450
// crossentropy_forward fused with its backward, shared-memory reductions (see
// crossentropy_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define FUSED
#include "crossentropy_forward.glsl"
