#version 450
// swiglu_backward: accumulates the gradients of the gate (dout * u * σ(g)(1 + g(1 - σ(g))))
// and of up (dout * silu(g)) into dgu.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer DGU { float dgu[]; };
layout(set = 0, binding = 1) readonly buffer GU { float gu[]; };
layout(set = 0, binding = 2) readonly buffer Dout { float dout[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint I;
    uint off_dgu;
    uint off_gu;
    uint off_dout;
} p;

void main() {
    uint n = p.rows * p.I;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint k = gl_GlobalInvocationID.x; k < n; k += stride) {
        uint r = k / p.I;
        uint i = k % p.I;
        uint gi = 2 * r * p.I + i;
        float g = gu[p.off_gu + gi];
        float u = gu[p.off_gu + gi + p.I];
        float d = dout[p.off_dout + k];
        float sg = 1.0 / (1.0 + exp(-g));
        dgu[p.off_dgu + gi + p.I] += d * (g * sg);
        dgu[p.off_dgu + gi] += d * u * (sg * (1.0 + g * (1.0 - sg)));
    }
}
