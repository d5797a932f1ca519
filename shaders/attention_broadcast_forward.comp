#version 450
// attention_broadcast_forward: attention_flash_forward's results (output and log-sum-exp,
// same bindings and parameters) with one query per invocation. Keys come in tiles of SG, one
// key a lane: a tile's scores, one rescale of the running output (the online softmax), then
// its values. Each query's bits depend only on its row and on tiles starting at key 0, so a
// query decoded against the KV cache matches the full-sequence forward.
#extension GL_GOOGLE_include_directive : require
#include "attention_broadcast_common.glsl"
#include "attention_forward_params.glsl"

float qv[HS];
float acc[HS];

void queries(uint b, uint h, uint first) {
    uint t = min(first + gl_LocalInvocationID.x, p.Tq - 1u); // past the last query: repeat it, write nothing
    uint qpos = p.pos + t;
    uint nkeys = p.pos + min(first + gl_WorkGroupSize.x, p.Tq); // keys the workgroup's last query sees
    uint q0 = p.off_q + (b * p.Tq + t) * p.qstride + h * HS;
    uint kbase = p.off_k + b * p.kvbatch + h * HS;
    uint vbase = p.off_v + b * p.kvbatch + h * HS;
    uint lane = gl_SubgroupInvocationID;
    for (uint d = 0u; d < HS; d++) {
        qv[d] = q[q0 + d];
        acc[d] = 0.0;
    }
    float m = NEG_INF;
    float l = 0.0;
    for (uint k0 = 0u; k0 < nkeys; k0 += SG) {
        // This lane's key of the tile (past the last key: the last, never used).
        uint mine = min(k0 + lane, nkeys - 1u) * p.kvstride;
        float s[SG];
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            s[c] = 0.0;
        }
        for (uint d = 0u; d < HS; d++) {
            float kd = k[kbase + mine + d];
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                s[c] += qv[d] * subgroupShuffle(kd, c);
            }
        }
        float mt = NEG_INF;
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            s[c] = k0 + c <= qpos ? s[c] * p.scale : NEG_INF;
            mt = max(mt, s[c]);
        }
        // Key 0 is in every query's first tile, so mnew is finite from there on.
        float mnew = max(m, mt);
        float alpha = exp(m - mnew);
        float e[SG];
        float rowsum = 0.0;
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            e[c] = exp(s[c] - mnew);
            rowsum += e[c];
        }
        l = l * alpha + rowsum;
        m = mnew;
        uint live = min(nkeys - k0, SG); // keys of the tile that exist
        for (uint d = 0u; d < HS; d++) {
            float vd = v[vbase + mine + d];
            float a = acc[d] * alpha;
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                float vc = subgroupShuffle(vd, c);
                if (c < live) {
                    a += e[c] * vc;
                }
            }
            acc[d] = a;
        }
    }
    if (first + gl_LocalInvocationID.x < p.Tq) {
        float inv = 1.0 / l;
        uint o0 = p.off_out + (b * p.Tq + t) * p.ostride + h * HS;
        for (uint d = 0u; d < HS; d++) {
            outv[o0 + d] = acc[d] * inv;
        }
        if (p.write_lse != 0u) {
            lse[p.off_lse + (b * p.NH + h) * p.Tq + t] = m + log(l);
        }
    }
}

void main() {
    uint first = gl_WorkGroupID.x * gl_WorkGroupSize.x;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        queries(b, gl_WorkGroupID.y, first);
    }
}
