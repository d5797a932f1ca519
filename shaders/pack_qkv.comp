#version 450
// pack_qkv: row r of qkv = q[r] | k[r] | v[r] with each of the KV heads of k and v repeated
// H/KV times, so query head h finds KV head h/(H/KV) at index h. One invocation per element
// of qkv.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer QKV { float qkv[]; };
layout(set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(set = 0, binding = 2) readonly buffer K { float k[]; };
layout(set = 0, binding = 3) readonly buffer V { float v[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint H;
    uint KV;
    uint D;
    uint off_qkv;
    uint off_q;
    uint off_k;
    uint off_v;
} p;

void main() {
    uint qw = p.H * p.D;
    uint kw = p.KV * p.D;
    uint n = p.rows * 3 * qw;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
        uint r = e / (3 * qw);
        uint c = e % (3 * qw);
        float x;
        if (c < qw) {
            x = q[p.off_q + r * qw + c];
        } else {
            uint part = c / qw; // 1: k, 2: v
            uint h = (c % qw) / p.D;
            uint g = h / (p.H / p.KV);
            uint src = r * kw + g * p.D + c % p.D;
            x = part == 1 ? k[p.off_k + src] : v[p.off_v + src];
        }
        qkv[p.off_qkv + e] = x;
    }
}
