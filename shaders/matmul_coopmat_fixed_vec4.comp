#version 450
// matmul_coopmat with vec4 operand loads and the first blocking of a 16x16x16 shape fixed (see
// matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define VEC4
#define FIXED
#include "matmul_coopmat.glsl"
