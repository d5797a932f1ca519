#version 450
// encoder_backward_wpe: dwpe[t, c] += dout[b, t, c] for each sequence b in order (the CPU
// backend's order, so the same bits).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dwpe { float dwpe[]; };
layout(set = 0, binding = 1) readonly buffer Dout { float dout[]; };
layout(push_constant) uniform Params {
    uint n; // T*C
    uint B; // sequences in this dispatch
    uint off_dwpe;
    uint off_dout;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float acc = dwpe[p.off_dwpe + i];
        for (uint b = 0; b < p.B; b++) {
            acc += dout[p.off_dout + b * p.n + i];
        }
        dwpe[p.off_dwpe + i] = acc;
    }
}
