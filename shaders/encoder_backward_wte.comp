#version 450
// encoder_backward_wte, one column per invocation (see encoder_backward_wte.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM float
#include "encoder_backward_wte.glsl"
