#version 450
// attention_broadcast_query: attention_flash_query's results (dq added to dqkv, dsum = dout·out
// stored for the key pass; same bindings and parameters) with one query per invocation, over
// the keys at or below its diagonal in increasing order, in tiles of SG keys, one a lane.
#extension GL_GOOGLE_include_directive : require
#include "attention_broadcast_common.glsl"
#include "attention_backward_params.glsl"

float qv[HS];
float dov[HS]; // dout
float dq[HS];

void queries(uint b, uint h, uint first) {
    uint C3 = 3u * p.C;
    uint t = min(first + gl_LocalInvocationID.x, p.T - 1u); // past the last query: repeat it, write nothing
    bool mine = first + gl_LocalInvocationID.x < p.T;
    uint qbase = p.off_qkv + b * p.T * C3 + h * HS;
    uint q0 = qbase + t * C3;
    uint d0 = p.off_dout + (b * p.T + t) * p.C + h * HS;
    uint o0 = p.off_out + (b * p.T + t) * p.C + h * HS;
    uint row = (b * p.NH + h) * p.T;
    uint lane = gl_SubgroupInvocationID;
    float D = 0.0;
    for (uint d = 0u; d < HS; d++) {
        qv[d] = qkv[q0 + d];
        dov[d] = dout[d0 + d];
        dq[d] = 0.0;
        D += dov[d] * outv[o0 + d];
    }
    if (mine) {
        dsum[p.off_dsum + row + t] = D;
    }
    float L = lse[p.off_lse + row + t];
    uint nkeys = min(first + gl_WorkGroupSize.x, p.T);
    for (uint k0 = 0u; k0 < nkeys; k0 += SG) {
        uint live = min(nkeys - k0, SG); // keys of the tile that exist
        uint kr = qbase + min(k0 + lane, nkeys - 1u) * C3 + p.C; // this lane's key
        uint vr = kr + p.C;
        float s[SG];
        float dp[SG];
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            s[c] = 0.0;
            dp[c] = 0.0;
        }
        for (uint d = 0u; d < HS; d++) {
            float kd = qkv[kr + d];
            float vd = qkv[vr + d];
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                s[c] += qv[d] * subgroupShuffle(kd, c);
                dp[c] += dov[d] * subgroupShuffle(vd, c);
            }
        }
        float ds[SG];
        [[unroll]] for (uint c = 0u; c < SG; c++) {
            float pr = k0 + c <= t ? exp(s[c] * p.scale - L) : 0.0;
            ds[c] = pr * (dp[c] - D);
        }
        for (uint d = 0u; d < HS; d++) {
            float kd = qkv[kr + d];
            float a = dq[d];
            [[unroll]] for (uint c = 0u; c < SG; c++) {
                float kc = subgroupShuffle(kd, c);
                if (c < live) {
                    a += ds[c] * kc;
                }
            }
            dq[d] = a;
        }
    }
    if (mine) {
        for (uint d = 0u; d < HS; d++) {
            dqkv[q0 - p.off_qkv + p.off_dqkv + d] += dq[d] * p.scale;
        }
    }
}

void main() {
    uint first = gl_WorkGroupID.x * gl_WorkGroupSize.x;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        queries(b, gl_WorkGroupID.y, first);
    }
}
