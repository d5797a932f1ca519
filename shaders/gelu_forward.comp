#version 450
#extension GL_GOOGLE_include_directive : require
// gelu_forward: out = GELU(inp) elementwise (gelu.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Inp { float inp[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_inp;
    float scaling; // llm.c's sqrtf(2.0f / M_PI), from the host
} p;

#include "gelu.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        outv[p.off_out + i] = gelu(inp[p.off_inp + i], p.scaling);
    }
}
