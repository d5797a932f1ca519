#version 450
// logsoftmax_gather: one workgroup per row of Vp logits; with z = (logits[:V] - max) / T,
// S = sum exp(z), A = sum exp(z) z: logp[row] = z[target] - log S and, when has_ent,
// entropy[row] = log S - A/S. Subtracting the max before scaling keeps z exact to a rounding.
// logsoftmax_gather_backward recomputes S and A with the same code, hence the same bits.
// has_cut truncates the row to the kept set {v : logits[v] >= cut[row]} plus the target (a
// top-k/top-p sampler's set, replayed): the max, S and A run over kept columns only, so the
// others have probability exactly 0 and add nothing to the entropy.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Logp { float logp[]; };
layout(set = 0, binding = 1) writeonly buffer Ent { float ent[]; };
layout(set = 0, binding = 2) readonly buffer Logits { float logits[]; };
layout(set = 0, binding = 3) readonly buffer Targets { int targets[]; };
layout(set = 0, binding = 4) readonly buffer Cut { float cut[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint has_ent;
    float invT;
    uint has_cut;
    uint off_logp;
    uint off_ent;
    uint off_logits;
    uint off_tg;
    uint off_cut;
} p;

shared float red[gl_WorkGroupSize.x];
shared float red2[gl_WorkGroupSize.x];

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

vec2 groupSum2(float a, float b) {
    uint l = gl_LocalInvocationID.x;
    red[l] = a;
    red2[l] = b;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            red[l] += red[l + s];
            red2[l] += red2[l + s];
        }
        barrier();
    }
    vec2 r = vec2(red[0], red2[0]);
    barrier();
    return r;
}

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint l0 = p.off_logits + row * p.Vp;
        uint ix = uint(targets[p.off_tg + row]);
        bool all = p.has_cut == 0;
        float c = all ? 0.0 : cut[p.off_cut + row];
        float m = uintBitsToFloat(0xff800000u); // -inf
        for (uint v = l; v < p.V; v += W) {
            float x = logits[l0 + v];
            if (all || x >= c || v == ix) {
                m = max(m, x);
            }
        }
        m = groupMax(m);
        float s = 0.0;
        float a = 0.0;
        for (uint v = l; v < p.V; v += W) {
            float x = logits[l0 + v];
            if (all || x >= c || v == ix) {
                float z = (x - m) * p.invT;
                float e = exp(z);
                s += e;
                a += e * z;
            }
        }
        vec2 sa = groupSum2(s, a);
        if (l == 0) {
            float logZ = log(sa.x);
            logp[p.off_logp + row] = (logits[l0 + ix] - m) * p.invT - logZ;
            if (p.has_ent != 0) {
                ent[p.off_ent + row] = logZ - sa.y / sa.x;
            }
        }
    }
}
