#version 450
// swiglu_forward: out = silu(gate) * up elementwise, silu(g) = g / (1 + e^-g).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Gate { float gate[]; };
layout(set = 0, binding = 2) readonly buffer Up { float up[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_gate;
    uint off_up;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float g = gate[p.off_gate + i];
        outv[p.off_out + i] = g * (1.0 / (1.0 + exp(-g))) * up[p.off_up + i];
    }
}
