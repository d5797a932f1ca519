#version 450
// gelu_backward, one element per invocation (see gelu_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM float
#include "gelu_backward.glsl"
