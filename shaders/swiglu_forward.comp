#version 450
// swiglu_forward: out[r, i] = silu(gu[r, i]) * gu[r, I + i], silu(g) = g / (1 + e^-g).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer GU { float gu[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint I;
    uint off_out;
    uint off_gu;
} p;

void main() {
    uint n = p.rows * p.I;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint k = gl_GlobalInvocationID.x; k < n; k += stride) {
        uint r = k / p.I;
        uint i = k % p.I;
        float g = gu[p.off_gu + 2 * r * p.I + i];
        float u = gu[p.off_gu + 2 * r * p.I + p.I + i];
        outv[p.off_out + k] = g * (1.0 / (1.0 + exp(-g))) * u;
    }
}
