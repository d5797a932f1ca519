#version 450
// matmul_coopmat with vec4 operand loads, for operands whose rows start at multiples of 4
// elements (see matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define VEC4
#include "matmul_coopmat.glsl"
