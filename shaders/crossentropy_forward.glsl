// crossentropy_forward: one workgroup per row of Vp logits (llm.c's softmax_forward and
// crossentropy_forward): probs = softmax over the first V columns, padded columns 0,
// losses[row] = -log probs[target]. One pass over the logits finds the row's max and the sum
// of exp(x - max) together (an online softmax): each lane keeps a running max and sum, and
// for each group of four columns takes their max, rescales its sum to it once and adds the
// four exps (five exps for four columns, where a rescale decided column by column costs two
// a column in SIMD lanes, both branches running); the lanes' sums are then rescaled to the
// row's max and added (reduce.glsl). A second pass writes the probabilities. The order of operations is fixed, so
// results are repeatable.
//
// Each lane takes four consecutive columns at a time (lane l columns 4l..4l+3, then 4(l+W)..),
// in column order. With VEC4 (rows starting on a vec4, Vp a multiple of 4) they are one vec4
// load or store: the same columns in the same order, so the same bits as without.
//
// With FUSED (llm.c's fused classifier) the second pass writes the loss gradient instead,
// (probs - [v == target]) * dloss, the same bits as crossentropy_backward adds to zeroed
// dlogits, and no probabilities are kept.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Losses { float losses[]; };
layout(set = 0, binding = 1) writeonly buffer Probs { float probs[]; }; // dlogits when FUSED
layout(set = 0, binding = 2) readonly buffer Logits { float logits[]; };
#ifdef VEC4
layout(set = 0, binding = 1) writeonly buffer Probs4 { vec4 probs4[]; };
layout(set = 0, binding = 2) readonly buffer Logits4 { vec4 logits4[]; };
#endif
layout(set = 0, binding = 3) readonly buffer Targets { int targets[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint off_losses;
    uint off_probs;
    uint off_logits;
    uint off_tg;
#ifdef FUSED
    float dloss;
#endif
} p;

#include "reduce.glsl"

// load4 reads columns v..v+3 of the row starting at l0; columns at or past V read column V-1.
vec4 load4(uint l0, uint v) {
#ifdef VEC4
    return logits4[(l0 + v) >> 2];
#else
    uint last = p.V - 1u;
    return vec4(logits[l0 + min(v, last)], logits[l0 + min(v + 1u, last)], logits[l0 + min(v + 2u, last)],
                logits[l0 + min(v + 3u, last)]);
#endif
}

// store4 writes columns v..v+3 (those before V without VEC4, where the padding loop writes
// the rest).
void store4(uint p0, uint v, vec4 x) {
#ifdef VEC4
    probs4[(p0 + v) >> 2] = x;
#else
    [[unroll]] for (uint c = 0u; c < 4u; c++) {
        if (v + c < p.V) {
            probs[p0 + v + c] = x[c];
        }
    }
#endif
}

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        uint l0 = p.off_logits + row * p.Vp;
        uint p0 = p.off_probs + row * p.Vp;
        float m = uintBitsToFloat(0xff800000u); // -inf: a lane without columns adds 0 below
        float s = 0.0;
        for (uint v = 4u * l; v < p.V; v += 4u * W) {
            vec4 x4 = load4(l0, v);
            // Columns past V count as -inf: exp gives them 0. Column v is always below V,
            // so the group's max, and mnew, are finite.
            [[unroll]] for (uint c = 1u; c < 4u; c++) {
                x4[c] = v + c < p.V ? x4[c] : uintBitsToFloat(0xff800000u);
            }
            float mnew = max(m, max(max(x4.x, x4.y), max(x4.z, x4.w)));
            vec4 e = exp(x4 - mnew);
            s = s * exp(m - mnew) + ((e.x + e.y) + (e.z + e.w));
            m = mnew;
        }
        float rowMax = groupMax(m);
        float sum = groupSum(s * exp(m - rowMax));
        uint ix = uint(targets[p.off_tg + row]);
        for (uint v = 4u * l; v < p.V; v += 4u * W) {
            vec4 x4 = load4(l0, v);
            vec4 out4;
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                float pv = exp(x4[c] - rowMax) / sum;
#ifdef FUSED
                float g = pv;
                if (v + c == ix) {
                    losses[p.off_losses + row] = -log(pv);
                    g -= 1.0;
                }
                out4[c] = v + c < p.V ? g * p.dloss : 0.0;
#else
                out4[c] = v + c < p.V ? pv : 0.0;
                if (v + c == ix) {
                    losses[p.off_losses + row] = -log(pv);
                }
#endif
            }
            store4(p0, v, out4);
        }
        // The padding past the last group of four (and, without VEC4, within it).
#ifdef VEC4
        uint pad = (p.V + 3u) & ~3u;
#else
        uint pad = p.V;
#endif
        for (uint v = pad + l; v < p.Vp; v += W) {
            probs[p0 + v] = 0.0;
        }
    }
}
