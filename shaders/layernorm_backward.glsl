// layernorm_backward: the input gradient, one workgroup per row (llm.c's layernorm_backward):
// with norm = (x - mean) * rstd and dn = w * dout,
// dinp += ((dn - mean(dn)) - norm * mean(dn * norm)) * rstd.
// dweight and dbias are column sums over rows, done by layernorm_backward_partial and
// layernorm_backward_colsum.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dinp { float dinp[]; };
layout(set = 0, binding = 1) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
layout(set = 0, binding = 3) readonly buffer Weight { float w[]; };
layout(set = 0, binding = 4) readonly buffer Mean { float meanv[]; };
layout(set = 0, binding = 5) readonly buffer Rstd { float rstdv[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint off_dinp;
    uint off_dout;
    uint off_inp;
    uint off_w;
    uint off_mean;
    uint off_rstd;
} p;

#include "reduce.glsl"


void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint x0 = p.off_inp + row * p.C;
        uint d0 = p.off_dout + row * p.C;
        float m = meanv[p.off_mean + row];
        float rs = rstdv[p.off_rstd + row];
        float a = 0.0;
        float b = 0.0;
        for (uint i = l; i < p.C; i += W) {
            float norm = (inp[x0 + i] - m) * rs;
            float dn = w[p.off_w + i] * dout[d0 + i];
            a += dn;
            b += dn * norm;
        }
        vec2 s = groupSum2(a, b) / float(p.C);
        uint o0 = p.off_dinp + row * p.C;
        for (uint i = l; i < p.C; i += W) {
            float norm = (inp[x0 + i] - m) * rs;
            float dn = w[p.off_w + i] * dout[d0 + i];
            dinp[o0 + i] += ((dn - s.x) - norm * s.y) * rs;
        }
    }
}
