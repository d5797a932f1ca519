#version 450
// matmul_coopmat through VK_KHR_cooperative_matrix, with scalar operand loads (see
// matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define KHR
#include "matmul_coopmat.glsl"
