#version 450
// crossentropy_forward with shared-memory reductions, vec4 loads and stores
// (see crossentropy_forward.glsl).
#extension GL_GOOGLE_include_directive : require
#define VEC4
#include "crossentropy_forward.glsl"
