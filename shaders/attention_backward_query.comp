#version 450
// attention_backward_query: the first pass of the attention backward, one workgroup per query
// row (b, h, t). With datt[t2] = dout_t · v_t2, the softmax backward
// dpre[t2] = att[t2] (datt[t2] - sum_j att[j] datt[j]) (the O(T) identity the CPU backend uses)
// goes to scratch (zeros above the diagonal) and dq_t += sum_t2 k_t2 (dpre[t2] * scale).
// attention_backward_key then reads scratch by columns for dk and dv.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dqkv { float dqkv[]; };
layout(set = 0, binding = 1) coherent buffer Scratch { float dpre[]; };
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

shared float red[gl_WorkGroupSize.x];

float groupSum(float x) {
    uint l = gl_LocalInvocationID.x;
    red[l] = x;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            red[l] += red[l + s];
        }
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    uint C3 = 3 * p.C;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint t = row % p.T;
        uint h = (row / p.T) % p.NH;
        uint b = row / (p.T * p.NH);
        uint n = t + 1;
        uint rel = b * p.T * C3 + h * p.hs; // q of this head at position 0
        uint base = p.off_qkv + rel;
        uint d0 = p.off_dout + (b * p.T + t) * p.C + h * p.hs;
        uint s0 = p.off_scratch + row * p.T;
        uint a0 = p.off_att + row * p.T;

        // datt into scratch, then the softmax backward in place: each lane keeps its positions.
        float dot = 0.0;
        for (uint t2 = l; t2 < n; t2 += W) {
            uint vt = base + t2 * C3 + 2 * p.C;
            float s = 0.0;
            for (uint i = 0; i < p.hs; i++) {
                s += qkv[vt + i] * dout[d0 + i];
            }
            dpre[s0 + t2] = s;
            dot += att[a0 + t2] * s;
        }
        for (uint t2 = n + l; t2 < p.T; t2 += W) {
            dpre[s0 + t2] = 0.0;
        }
        dot = groupSum(dot);
        for (uint t2 = l; t2 < n; t2 += W) {
            dpre[s0 + t2] = att[a0 + t2] * (dpre[s0 + t2] - dot);
        }
        // dq reads every lane's dpre.
        memoryBarrierBuffer();
        barrier();

        uint dq0 = p.off_dqkv + rel + t * C3;
        if (p.hs <= W) {
            uint parts = W / p.hs;
            uint i = l % p.hs;
            uint part = l / p.hs;
            float acc = 0.0;
            if (part < parts) {
                for (uint t2 = part; t2 < n; t2 += parts) {
                    acc += qkv[base + t2 * C3 + p.C + i] * (dpre[s0 + t2] * p.scale);
                }
            }
            red[l] = acc;
            barrier();
            if (l < p.hs) {
                float g = red[l];
                for (uint j = 1; j < parts; j++) {
                    g += red[j * p.hs + l];
                }
                dqkv[dq0 + l] += g;
            }
        } else {
            for (uint i = l; i < p.hs; i += W) {
                float acc = 0.0;
                for (uint t2 = 0; t2 < n; t2++) {
                    acc += qkv[base + t2 * C3 + p.C + i] * (dpre[s0 + t2] * p.scale);
                }
                dqkv[dq0 + i] += acc;
            }
        }
        // Before the next row's reduction reuses red.
        barrier();
    }
}
