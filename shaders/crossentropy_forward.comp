#version 450
// crossentropy_forward with shared-memory reductions (see crossentropy_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#include "crossentropy_forward.glsl"
