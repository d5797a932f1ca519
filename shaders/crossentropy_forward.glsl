// crossentropy_forward: one workgroup per row of Vp logits (llm.c's softmax_forward and
// crossentropy_forward): probs = softmax over the first V columns, padded columns 0,
// losses[row] = -log probs[target]. One pass over the logits finds the row's max and the sum
// of exp(x - max) together (an online softmax): each lane keeps a running max and rescales its
// sum whenever the max grows; the lanes' sums are then rescaled to the row's max and added
// (reduce.glsl). A second pass writes the probabilities. The order of operations is fixed, so
// results are repeatable.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Losses { float losses[]; };
layout(set = 0, binding = 1) writeonly buffer Probs { float probs[]; };
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

#include "reduce.glsl"

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint l0 = p.off_logits + row * p.Vp;
        uint p0 = p.off_probs + row * p.Vp;
        float m = uintBitsToFloat(0xff800000u); // -inf: a lane without columns adds 0 below
        float s = 0.0;
        for (uint v = l; v < p.V; v += W) {
            float x = logits[l0 + v];
            if (x > m) {
                s = s * exp(m - x) + 1.0;
                m = x;
            } else {
                s += exp(x - m);
            }
        }
        float rowMax = groupMax(m);
        float sum = groupSum(s * exp(m - rowMax));
        uint ix = uint(targets[p.off_tg + row]);
        for (uint v = l; v < p.V; v += W) {
            float pv = exp(logits[l0 + v] - rowMax) / sum;
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
