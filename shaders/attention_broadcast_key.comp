#version 450
// attention_broadcast_key: attention_flash_key's results (dk and dv added to dqkv; same
// bindings and parameters) with one key per invocation, over the queries at or past its
// diagonal in increasing order. Reads the dsum the query pass stored.
#extension GL_GOOGLE_include_directive : require
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
    for (uint d = 0u; d < HS; d++) {
        kv[d] = qkv[k0 + d];
        vv[d] = qkv[k0 + p.C + d];
        dk[d] = 0.0;
        dv[d] = 0.0;
    }
    for (uint tq = first; tq < p.T; tq++) {
        uint qr = qbase + tq * C3;
        uint dr = dbase + tq * p.C;
        float s = 0.0;
        float dp = 0.0;
        for (uint d = 0u; d < HS; d++) {
            s += qkv[qr + d] * kv[d];
            dp += dout[dr + d] * vv[d];
        }
        float pr = tk <= tq ? exp(s * p.scale - lse[p.off_lse + row + tq]) : 0.0;
        float ds = pr * (dp - dsum[p.off_dsum + row + tq]);
        for (uint d = 0u; d < HS; d++) {
            dv[d] += pr * dout[dr + d];
            dk[d] += ds * qkv[qr + d];
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
