#version 450
// encoder_backward_wte, four columns per invocation, for C and offsets that are multiples of
// 4 (see encoder_backward_wte.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM vec4
#include "encoder_backward_wte.glsl"
