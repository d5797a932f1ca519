#version 450
// matmul_coopmat with scalar operand loads and the first blocking of a 16x16x16 shape fixed (see
// matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define FIXED
#include "matmul_coopmat.glsl"
