#version 450
// crossentropy_forward: one workgroup per row of Vp logits (llm.c's softmax_forward and
// crossentropy_forward): probs = softmax over the first V columns (max subtracted, exp, divided
// by the sum), padded columns 0, losses[row] = -log probs[target]. Reductions are per-lane
// strided partials combined in a fixed tree, so results are repeatable.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Losses { float losses[]; };
layout(set = 0, binding = 1) buffer Probs { float probs[]; };
layout(set = 0, binding = 2) readonly buffer Logits { float logits[]; };
layout(set = 0, binding = 3) readonly buffer Targets { int targets[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint off_losses;
    uint off_probs;
    uint off_logits;
    uint off_tg;
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
        uint l0 = p.off_logits + row * p.Vp;
        uint p0 = p.off_probs + row * p.Vp;
        float m = uintBitsToFloat(0xff800000u); // -inf
        for (uint v = l; v < p.V; v += W) {
            m = max(m, logits[l0 + v]);
        }
        m = groupMax(m);
        float s = 0.0;
        for (uint v = l; v < p.V; v += W) {
            float e = exp(logits[l0 + v] - m);
            probs[p0 + v] = e; // each lane rereads only its own columns
            s += e;
        }
        float sum = groupSum(s);
        uint ix = uint(targets[p.off_tg + row]);
        for (uint v = l; v < p.V; v += W) {
            float pv = probs[p0 + v] / sum;
            probs[p0 + v] = pv;
            if (v == ix) {
                losses[p.off_losses + row] = -log(pv);
            }
        }
        for (uint v = p.V + l; v < p.Vp; v += W) {
            probs[p0 + v] = 0.0;
        }
    }
}
