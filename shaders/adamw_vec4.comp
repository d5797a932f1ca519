#version 450
// adamw, four parameters per invocation, for n and offsets that are multiples of 4 (see
// adamw.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM vec4
#include "adamw.glsl"
