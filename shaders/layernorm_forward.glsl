// layernorm_forward: one workgroup per row of C values (llm.c's layernorm_forward): mean, then
// the biased variance about it, rstd = 1/sqrt(var + 1e-5), out = (x - mean) * rstd * w + b.
// Sums are per-lane strided partials reduced by groupSum (reduce.glsl), so results are
// repeatable.
//
// With RESIDUAL (llm.c's fused_residual_forward) the row is first made as x = a + b and
// written to inp in the pass that sums it (norm_input.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) writeonly buffer Mean { float meanv[]; };
layout(set = 0, binding = 2) writeonly buffer Rstd { float rstdv[]; };
#ifdef RESIDUAL
layout(set = 0, binding = 3) buffer Inp { float inp[]; };
layout(set = 0, binding = 6) readonly buffer A { float av[]; };
layout(set = 0, binding = 7) readonly buffer B { float bv[]; };
#else
layout(set = 0, binding = 3) readonly buffer Inp { float inp[]; };
#endif
layout(set = 0, binding = 4) readonly buffer Weight { float w[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint off_out;
    uint off_mean;
    uint off_rstd;
    uint off_inp;
    uint off_w;
    uint off_b;
#ifdef RESIDUAL
    uint off_a;
    uint off_bv;
#endif
} p;

#include "reduce.glsl"
#include "norm_input.glsl"

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint x0 = p.off_inp + row * p.C;
        float s = 0.0;
        for (uint i = l; i < p.C; i += W) {
            s += normInput(row, x0, i);
        }
        float m = groupSum(s) / float(p.C);
        float v = 0.0;
        for (uint i = l; i < p.C; i += W) {
            float d = inp[x0 + i] - m;
            v += d * d;
        }
        float rs = 1.0 / sqrt(groupSum(v) / float(p.C) + 1e-5);
        uint o0 = p.off_out + row * p.C;
        for (uint i = l; i < p.C; i += W) {
            outv[o0 + i] = (rs * (inp[x0 + i] - m)) * w[p.off_w + i] + bias[p.off_b + i];
        }
        if (l == 0) {
            meanv[p.off_mean + row] = m;
            rstdv[p.off_rstd + row] = rs;
        }
    }
}
