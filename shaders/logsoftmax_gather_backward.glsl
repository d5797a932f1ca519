// logsoftmax_gather_backward: dlogits[row, v] += g_v / T for v < V, the gradient of
// dlogp*logp + dent*entropy (see logsoftmax_gather, whose reductions this repeats):
// g_v = dlogp ([v == target] - p_v) - dent p_v (log p_v + H). has_ent 0 means no dentropy.
// has_cut truncates the row as logsoftmax_gather does; columns outside the kept set have
// p_v = 0 and are left untouched.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dlogits { float dlogits[]; };
layout(set = 0, binding = 1) readonly buffer Logits { float logits[]; };
layout(set = 0, binding = 2) readonly buffer Targets { int targets[]; };
layout(set = 0, binding = 3) readonly buffer Dlogp { float dlogp[]; };
layout(set = 0, binding = 4) readonly buffer Dent { float dent[]; };
layout(set = 0, binding = 5) readonly buffer Cut { float cut[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint has_ent;
    float invT;
    uint has_cut;
    uint off_d;
    uint off_logits;
    uint off_tg;
    uint off_dlogp;
    uint off_dent;
    uint off_cut;
} p;

#include "reduce.glsl"
#include "logsoftmax_row.glsl"

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        LogsoftmaxRow r = logsoftmaxRowAt(row);
        float logZ = log(r.sa.x);
        float H = logZ - r.sa.y / r.sa.x;
        float invS = 1.0 / r.sa.x;
        float dlp = dlogp[p.off_dlogp + row];
        float de = p.has_ent != 0 ? dent[p.off_dent + row] : 0.0;
        for (uint v = l; v < p.V; v += W) {
            float x = logits[r.l0 + v];
            if (!logsoftmaxKept(x, v, r.ix, r.all, r.c)) {
                continue;
            }
            float z = (x - r.m) * p.invT;
            float pv = exp(z) * invS;
            float g = -dlp * pv - de * pv * ((z - logZ) + H);
            if (v == r.ix) {
                g += dlp;
            }
            dlogits[p.off_d + row * p.Vp + v] += g * p.invT;
        }
    }
}
