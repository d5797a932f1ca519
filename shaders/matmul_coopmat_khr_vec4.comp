#version 450
// matmul_coopmat through VK_KHR_cooperative_matrix, with vec4 operand loads, for operands whose
// rows start at multiples of 4 elements (see matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define KHR
#define VEC4
#include "matmul_coopmat.glsl"
