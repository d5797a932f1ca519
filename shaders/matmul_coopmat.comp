#version 450
// matmul_coopmat with scalar operand loads (see matmul_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#include "matmul_coopmat.glsl"
