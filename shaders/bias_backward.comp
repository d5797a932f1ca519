#version 450
// bias_backward, one column per invocation (see bias_backward.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM float
#include "bias_backward.glsl"
