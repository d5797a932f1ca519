// rmsnorm_forward: one workgroup per row of C values: rstd = 1/sqrt(mean(x²) + eps),
// out = w * (x * rstd). The sum of squares is per-lane strided partials reduced by groupSum
// (reduce.glsl), so results are repeatable.
//
// With RESIDUAL the row is first made as x = a + b and written to inp in the pass that sums it
// (norm_input.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) writeonly buffer Rstd { float rstdv[]; };
#ifdef RESIDUAL
layout(set = 0, binding = 2) buffer Inp { float inp[]; };
layout(set = 0, binding = 4) readonly buffer A { float av[]; };
layout(set = 0, binding = 5) readonly buffer B { float bv[]; };
#else
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
#endif
layout(set = 0, binding = 3) readonly buffer Weight { float w[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint off_out;
    uint off_rstd;
    uint off_inp;
    uint off_w;
    float eps;
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
            float x = normInput(row, x0, i);
            s += x * x;
        }
        float rs = 1.0 / sqrt(groupSum(s) / float(p.C) + p.eps);
        uint o0 = p.off_out + row * p.C;
        for (uint i = l; i < p.C; i += W) {
            outv[o0 + i] = w[p.off_w + i] * (inp[x0 + i] * rs);
        }
        if (l == 0) {
            rstdv[p.off_rstd + row] = rs;
        }
    }
}
