#version 450
// matmul_tiled with scalar operand loads, rounding its operands to 16 bits (see
// matmul_tiled.glsl).
#extension GL_GOOGLE_include_directive : require
#define ROUND
#include "matmul_tiled.glsl"
