#version 450
#extension GL_GOOGLE_include_directive : require
// matmul_splitk_reduce: the second pass of a split-K product (vk/matmul.go). Each of the
// batch*M*N outputs adds its splits' partial sums part[(zb*splits + s)*mn + r] in increasing s,
// so the result depends only on the plan, never on scheduling.
// flags as matmul_tiled: 4 start from bias[off_bias + n], 8 start from out, 16 add the bias last,
// 64 also store GELU of each output at gelu_out[off_gelu + i] (gelu.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Part { float part[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer GeluOut { float gelu_out[]; };
layout(push_constant) uniform Params {
    uint total; // batch * mn
    uint mn;
    uint N;
    uint splits;
    uint off_out;
    uint off_part;
    uint off_bias;
    uint flags;
    uint off_gelu;
    float scaling; // GELU's, from the host
} p;

#include "gelu.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.total; i += stride) {
        uint zb = i / p.mn;
        uint r = i % p.mn;
        uint n = r % p.N;
        float v = 0.0;
        if ((p.flags & 8u) != 0u) {
            v = outv[p.off_out + i];
        } else if ((p.flags & 4u) != 0u) {
            v = bias[p.off_bias + n];
        }
        uint base = p.off_part + zb * p.splits * p.mn + r;
        for (uint s = 0; s < p.splits; s++) {
            v += part[base + s * p.mn];
        }
        if ((p.flags & 16u) != 0u) {
            v += bias[p.off_bias + n];
        }
        outv[p.off_out + i] = v;
        if ((p.flags & 64u) != 0u) {
            gelu_out[p.off_gelu + i] = gelu(v, p.scaling);
        }
    }
}
