// rmsnorm_backward: one workgroup per row: dinp += rstd*w*g - x * rstd³ * mean(g*w*x), with
// the row sum reduced by groupSum (reduce.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dinp { float dinp[]; };
layout(set = 0, binding = 1) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
layout(set = 0, binding = 3) readonly buffer Weight { float w[]; };
layout(set = 0, binding = 4) readonly buffer Rstd { float rstdv[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint off_dinp;
    uint off_dout;
    uint off_inp;
    uint off_w;
    uint off_rstd;
} p;

#include "reduce.glsl"


void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint r0 = row * p.C;
        float rs = rstdv[p.off_rstd + row];
        float s = 0.0;
        for (uint i = l; i < p.C; i += W) {
            s += dout[p.off_dout + r0 + i] * w[p.off_w + i] * inp[p.off_inp + r0 + i];
        }
        float k = groupSum(s) / float(p.C) * rs * rs * rs;
        for (uint i = l; i < p.C; i += W) {
            dinp[p.off_dinp + r0 + i] += rs * w[p.off_w + i] * dout[p.off_dout + r0 + i] - inp[p.off_inp + r0 + i] * k;
        }
    }
}
