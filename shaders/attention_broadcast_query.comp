#version 450
// attention_broadcast_query: attention_flash_query's results (dq added to dqkv, dsum = dout·out
// stored for the key pass; same bindings and parameters) with one query per invocation, over
// the keys at or below its diagonal in increasing order.
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
    for (uint key = 0u; key < nkeys; key++) {
        uint kr = qbase + key * C3 + p.C;
        uint vr = kr + p.C;
        float s = 0.0;
        float dp = 0.0;
        for (uint d = 0u; d < HS; d++) {
            s += qv[d] * qkv[kr + d];
            dp += dov[d] * qkv[vr + d];
        }
        float pr = key <= t ? exp(s * p.scale - L) : 0.0;
        float ds = pr * (dp - D);
        for (uint d = 0u; d < HS; d++) {
            dq[d] += ds * qkv[kr + d];
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
