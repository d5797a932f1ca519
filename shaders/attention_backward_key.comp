#version 450
// attention_backward_key: the second pass of the attention backward, one workgroup per key
// row (b, h, t2), over the queries t >= t2 that see it:
// dv_t2 += sum_t att[t, t2] dout_t and dk_t2 += sum_t (dpre[t, t2] * scale) q_t, with dpre from
// attention_backward_query in scratch.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dqkv { float dqkv[]; };
layout(set = 0, binding = 1) readonly buffer Scratch { float dpre[]; };
layout(set = 0, binding = 2) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 3) readonly buffer Qkv { float qkv[]; };
layout(set = 0, binding = 4) readonly buffer Att { float att[]; };
layout(push_constant) uniform Params {
    uint rows; // B*NH*T
    uint T;
    uint NH;
    uint hs;
    uint C;
    uint off_dqkv;
    uint off_scratch;
    uint off_dout;
    uint off_qkv;
    uint off_att;
    float scale;
} p;

shared float redk[gl_WorkGroupSize.x];
shared float redv[gl_WorkGroupSize.x];

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    uint C3 = 3 * p.C;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint t2 = row % p.T;
        uint bh = row / p.T;
        uint h = bh % p.NH;
        uint b = bh / p.NH;
        uint rel = b * p.T * C3 + h * p.hs; // q of this head at position 0
        uint q0 = p.off_qkv + rel;
        uint dk0 = p.off_dqkv + rel + t2 * C3 + p.C;
        uint dv0 = dk0 + p.C;
        uint d0 = p.off_dout + b * p.T * p.C + h * p.hs;
        uint col = bh * p.T * p.T + t2; // element (t, t2) of this head's T×T block is col + t*T
        if (p.hs <= W) {
            // parts lanes per gradient value, each over every parts-th query; the parts are
            // then added in order.
            uint parts = W / p.hs;
            uint i = l % p.hs;
            uint part = l / p.hs;
            float ak = 0.0;
            float av = 0.0;
            if (part < parts) {
                for (uint t = t2 + part; t < p.T; t += parts) {
                    ak += (dpre[p.off_scratch + col + t * p.T] * p.scale) * qkv[q0 + t * C3 + i];
                    av += att[p.off_att + col + t * p.T] * dout[d0 + t * p.C + i];
                }
            }
            redk[l] = ak;
            redv[l] = av;
            barrier();
            if (l < p.hs) {
                float gk = redk[l];
                float gv = redv[l];
                for (uint j = 1; j < parts; j++) {
                    gk += redk[j * p.hs + l];
                    gv += redv[j * p.hs + l];
                }
                dqkv[dk0 + l] += gk;
                dqkv[dv0 + l] += gv;
            }
            // Before the next row reuses redk and redv.
            barrier();
        } else {
            for (uint i = l; i < p.hs; i += W) {
                float ak = 0.0;
                float av = 0.0;
                for (uint t = t2; t < p.T; t++) {
                    ak += (dpre[p.off_scratch + col + t * p.T] * p.scale) * qkv[q0 + t * C3 + i];
                    av += att[p.off_att + col + t * p.T] * dout[d0 + t * p.C + i];
                }
                dqkv[dk0 + i] += ak;
                dqkv[dv0 + i] += av;
            }
        }
    }
}
