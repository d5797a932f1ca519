#version 450
// peak_coopmat through VK_KHR_cooperative_matrix (see peak_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define KHR
#include "peak_coopmat.glsl"
