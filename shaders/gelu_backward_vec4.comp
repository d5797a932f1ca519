#version 450
// gelu_backward, four elements per invocation, for n and offsets that are multiples of 4
// (see gelu_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM vec4
#define VEC4
#include "gelu_backward.glsl"
