#version 450
// bias_backward, four columns per invocation, for columns, leading dimensions and offsets
// that are multiples of 4 (see bias_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM vec4
#include "bias_backward.glsl"
