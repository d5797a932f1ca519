#version 450
// swiglu_backward: dgate += dout * up * σ(g)(1 + g(1 - σ(g))), dup += dout * silu(g).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer DGate { float dgate[]; };
layout(set = 0, binding = 1) buffer DUp { float dup[]; };
layout(set = 0, binding = 2) readonly buffer Gate { float gate[]; };
layout(set = 0, binding = 3) readonly buffer Up { float up[]; };
layout(set = 0, binding = 4) readonly buffer Dout { float dout[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_dgate;
    uint off_dup;
    uint off_gate;
    uint off_up;
    uint off_dout;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float g = gate[p.off_gate + i];
        float d = dout[p.off_dout + i];
        float sg = 1.0 / (1.0 + exp(-g));
        dup[p.off_dup + i] += d * (g * sg);
        dgate[p.off_dgate + i] += d * up[p.off_up + i] * (sg * (1.0 + g * (1.0 - sg)));
    }
}
