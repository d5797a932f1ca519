#version 450
// matmul_tiled with scalar operand loads (see matmul_tiled.glsl).
#extension GL_GOOGLE_include_directive : require
#include "matmul_tiled.glsl"
