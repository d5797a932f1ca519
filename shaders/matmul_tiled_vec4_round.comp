#version 450
// matmul_tiled with vec4 operand loads, rounding its operands to 16 bits (see
// matmul_tiled.glsl).
#extension GL_GOOGLE_include_directive : require
#define VEC4
#define ROUND
#include "matmul_tiled.glsl"
