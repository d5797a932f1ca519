#version 450
// adamw, one parameter per invocation (see adamw.glsl).
#extension GL_GOOGLE_include_directive : require
#define ELEM float
#include "adamw.glsl"
