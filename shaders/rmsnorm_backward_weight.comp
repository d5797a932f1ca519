#version 450
// rmsnorm_backward_weight: dw[c] += sum over rows, in row order, of dout * (x * rstd); one
// invocation per column, so the sum is repeatable without atomics.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dw { float dw[]; };
layout(set = 0, binding = 1) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
layout(set = 0, binding = 3) readonly buffer Rstd { float rstdv[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint off_dw;
    uint off_dout;
    uint off_inp;
    uint off_rstd;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint c = gl_GlobalInvocationID.x; c < p.C; c += stride) {
        float acc = dw[p.off_dw + c];
        for (uint r = 0; r < p.rows; r++) {
            acc += dout[p.off_dout + r * p.C + c] * (inp[p.off_inp + r * p.C + c] * rstdv[p.off_rstd + r]);
        }
        dw[p.off_dw + c] = acc;
    }
}
