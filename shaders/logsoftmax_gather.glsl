// logsoftmax_gather: one workgroup per row of Vp logits; with z = (logits[:V] - max) / T,
// S = sum exp(z), A = sum exp(z) z: logp[row] = z[target] - log S and, when has_ent,
// entropy[row] = log S - A/S. Subtracting the max before scaling keeps z exact to a rounding.
// The max, S and A come from one pass over the row (logsoftmax_row.glsl);
// logsoftmax_gather_backward recomputes them with the same code, hence the same bits.
// has_cut truncates the row to the kept set {v : logits[v] >= cut[row]} plus the target (a
// top-k/top-p sampler's set, replayed): the max, S and A run over kept columns only, so the
// others have probability exactly 0 and add nothing to the entropy.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Logp { float logp[]; };
layout(set = 0, binding = 1) writeonly buffer Ent { float ent[]; };
layout(set = 0, binding = 2) readonly buffer Logits { float logits[]; };
layout(set = 0, binding = 3) readonly buffer Targets { int targets[]; };
layout(set = 0, binding = 4) readonly buffer Cut { float cut[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint has_ent;
    float invT;
    uint has_cut;
    uint off_logp;
    uint off_ent;
    uint off_logits;
    uint off_tg;
    uint off_cut;
} p;

#include "reduce.glsl"
#include "logsoftmax_row.glsl"

void main() {
    uint l = gl_LocalInvocationID.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        LogsoftmaxRow r = logsoftmaxRowAt(row);
        if (l == 0) {
            float logZ = log(r.sa.x);
            logp[p.off_logp + row] = (logits[r.l0 + r.ix] - r.m) * p.invT - logZ;
            if (p.has_ent != 0) {
                ent[p.off_ent + row] = logZ - r.sa.y / r.sa.x;
            }
        }
    }
}
