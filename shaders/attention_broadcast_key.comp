#version 450
// attention_broadcast_key: attention_flash_key's results (dk and dv added to dqkv; same
// bindings and parameters) with one key per invocation, over the queries at or past its
// diagonal in increasing order, in tiles of SG queries, one a lane. Reads the dsum the query
// pass stored.
#extension GL_GOOGLE_include_directive : require
#define KEY_PASS
#include "attention_broadcast_common.glsl"
#include "attention_backward_params.glsl"

float kv[HS];
float vv[HS];
float dk[HS];
float dv[HS];

void keys(uint b, uint h, uint first) {
    uint C3 = 3u * p.C;
    uint tk = min(first + gl_LocalInvocationID.x, p.T - 1u); // past the last key: repeat it, write nothing
    uint qbase = p.off_qkv + b * p.T * C3 + h * HS;
    uint k0 = qbase + tk * C3 + p.C;
    uint dbase = p.off_dout + b * p.T * p.C + h * HS;
    uint row = (b * p.NH + h) * p.T;
    uint lane = gl_SubgroupInvocationID;
    for (uint d = 0u; d < HS; d++) {
        kv[d] = qkv[k0 + d];
        vv[d] = qkv[k0 + p.C + d];
        dk[d] = 0.0;
        dv[d] = 0.0;
    }
    for (uint t0 = first; t0 < p.T; t0 += SG) {
        uint live = min(p.T - t0, SG); // queries of the tile that exist
        uint tq = min(t0 + lane, p.T - 1u); // this lane's query
        uint qr = qbase + tq * C3;
        uint dr = dbase + tq * p.C;
        float L = lse[p.off_lse + row + tq];
        float Dq = dsum[p.off_dsum + row + tq];
        float s[SG];
        float dp[SG];
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            s[c] = 0.0;
            dp[c] = 0.0;
        }
        for (uint d = 0u; d < HS; d++) {
            float qd = qkv[qr + d];
            float od = dout[dr + d];
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                s[c] += subgroupShuffle(qd, c) * kv[d];
                dp[c] += subgroupShuffle(od, c) * vv[d];
            }
        }
        float pr[SG];
        float ds[SG];
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            float Lc = subgroupShuffle(L, c);
            float Dc = subgroupShuffle(Dq, c);
            pr[c] = tk <= t0 + c ? exp(s[c] * p.scale - Lc) : 0.0;
            ds[c] = pr[c] * (dp[c] - Dc);
        }
        for (uint d = 0u; d < HS; d++) {
            float qd = qkv[qr + d];
            float od = dout[dr + d];
            float a = dv[d];
            float g = dk[d];
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                float oc = subgroupShuffle(od, c);
                float qc = subgroupShuffle(qd, c);
                if (c < live) {
                    a += pr[c] * oc;
                    g += ds[c] * qc;
                }
            }
            dv[d] = a;
            dk[d] = g;
        }
    }
    if (first + gl_LocalInvocationID.x < p.T) {
        uint g = k0 - p.off_qkv + p.off_dqkv;
        for (uint d = 0u; d < HS; d++) {
            dqkv[g + d] += dk[d] * p.scale;
            dqkv[g + p.C + d] += dv[d];
        }
    }
}

void main() {
    uint first = gl_WorkGroupID.x * gl_WorkGroupSize.x;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        keys(b, gl_WorkGroupID.y, first);
    }
}
