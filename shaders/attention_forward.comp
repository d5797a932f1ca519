#version 450
// attention_forward: causal attention, one workgroup per query row (b, h, tq) (llm.c's
// attention_forward). The query at position pos+tq attends over keys 0..pos+tq: scores
// q·k * scale, softmax (max subtracted, exp, sum, times 1/sum) written to att, then
// out = sum att[t2] * v[t2]. AttentionForward binds q, k and v to the same qkv (pos 0, Tq = T);
// AttentionDecode binds the KV caches and a scratch row for att. Both run this kernel, so a
// decoded query gives the same bits as the full-sequence forward.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) coherent buffer Att { float att[]; };
layout(set = 0, binding = 2) readonly buffer Q { float q[]; };
layout(set = 0, binding = 3) readonly buffer K { float k[]; };
layout(set = 0, binding = 4) readonly buffer V { float v[]; };
layout(push_constant) uniform Params {
    uint rows;      // B*NH*Tq
    uint Tq;
    uint NH;
    uint hs;
    uint qstride;   // elements from one query to the next (3C)
    uint kvstride;  // from one key (value) to the next
    uint kvbatch;   // from one batch's keys to the next
    uint ostride;   // from one output row to the next (C)
    uint pos;       // position of the first query
    uint attstride; // elements per att row; entries past the row's keys are set to 0
    uint off_out;
    uint off_att;
    uint off_q;
    uint off_k;
    uint off_v;
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

float groupMax(float x) {
    uint l = gl_LocalInvocationID.x;
    red[l] = x;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            red[l] = max(red[l], red[l + s]);
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
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint tq = row % p.Tq;
        uint h = (row / p.Tq) % p.NH;
        uint b = row / (p.Tq * p.NH);
        uint n = p.pos + tq + 1;
        uint q0 = p.off_q + (b * p.Tq + tq) * p.qstride + h * p.hs;
        uint k0 = p.off_k + b * p.kvbatch + h * p.hs;
        uint v0 = p.off_v + b * p.kvbatch + h * p.hs;
        uint a0 = p.off_att + row * p.attstride;

        float m = uintBitsToFloat(0xff800000u); // -inf
        for (uint t2 = l; t2 < n; t2 += W) {
            uint kt = k0 + t2 * p.kvstride;
            float s = 0.0;
            for (uint i = 0; i < p.hs; i++) {
                s += q[q0 + i] * k[kt + i];
            }
            s *= p.scale;
            att[a0 + t2] = s;
            m = max(m, s);
        }
        for (uint t2 = n + l; t2 < p.attstride; t2 += W) {
            att[a0 + t2] = 0.0;
        }
        m = groupMax(m);
        float sum = 0.0;
        for (uint t2 = l; t2 < n; t2 += W) {
            float e = exp(att[a0 + t2] - m);
            att[a0 + t2] = e;
            sum += e;
        }
        float inv = 1.0 / groupSum(sum);
        for (uint t2 = l; t2 < n; t2 += W) {
            att[a0 + t2] *= inv;
        }
        // The weighted sum reads every lane's probabilities.
        memoryBarrierBuffer();
        barrier();

        uint o0 = p.off_out + (b * p.Tq + tq) * p.ostride + h * p.hs;
        if (p.hs <= W) {
            // parts lanes per output value, each summing every parts-th position; the parts
            // are then added in order.
            uint parts = W / p.hs;
            uint i = l % p.hs;
            uint part = l / p.hs;
            float acc = 0.0;
            if (part < parts) {
                for (uint t2 = part; t2 < n; t2 += parts) {
                    acc += att[a0 + t2] * v[v0 + t2 * p.kvstride + i];
                }
            }
            red[l] = acc;
            barrier();
            if (l < p.hs) {
                float o = red[l];
                for (uint j = 1; j < parts; j++) {
                    o += red[j * p.hs + l];
                }
                outv[o0 + l] = o;
            }
        } else {
            for (uint i = l; i < p.hs; i += W) {
                float acc = 0.0;
                for (uint t2 = 0; t2 < n; t2++) {
                    acc += att[a0 + t2] * v[v0 + t2 * p.kvstride + i];
                }
                outv[o0 + i] = acc;
            }
        }
        // Before the next row's reductions reuse red.
        barrier();
    }
}
