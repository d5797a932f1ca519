#version 450
// pack_qkv_backward: dq += the q part of dqkv; each element of dk and dv adds the H/KV copies
// of its KV head in head order. One invocation per element of dq, dk and dv.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer DQ { float dq[]; };
layout(set = 0, binding = 1) buffer DK { float dk[]; };
layout(set = 0, binding = 2) buffer DV { float dv[]; };
layout(set = 0, binding = 3) readonly buffer DQKV { float dqkv[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint H;
    uint KV;
    uint D;
    uint off_dq;
    uint off_dk;
    uint off_dv;
    uint off_dqkv;
} p;

void main() {
    uint qw = p.H * p.D;
    uint kw = p.KV * p.D;
    uint rep = p.H / p.KV;
    uint per = qw + 2 * kw;
    uint n = p.rows * per;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
        uint r = e / per;
        uint c = e % per;
        uint row = p.off_dqkv + r * 3 * qw;
        if (c < qw) {
            dq[p.off_dq + r * qw + c] += dqkv[row + c];
            continue;
        }
        uint part = c < qw + kw ? 1 : 2;
        uint i = part == 1 ? c - qw : c - qw - kw;
        uint g = i / p.D;
        uint d = i % p.D;
        float s = 0.0;
        for (uint j = 0; j < rep; j++) {
            s += dqkv[row + part * qw + (g * rep + j) * p.D + d];
        }
        if (part == 1) {
            dk[p.off_dk + r * kw + i] += s;
        } else {
            dv[p.off_dv + r * kw + i] += s;
        }
    }
}
