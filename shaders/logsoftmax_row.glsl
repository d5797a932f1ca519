// logsoftmax_row.glsl: the row statistics logsoftmax_gather and logsoftmax_gather_backward
// share, one code for both so that the backward gets the forward's bits. The including kernel
// declares logits[], p.V and p.invT, and includes reduce.glsl first.

// logsoftmaxKept reports whether column v, with logit x, is in the row's kept set: every
// column when all, else those at or above the cutoff c, and the target ix.
bool logsoftmaxKept(float x, uint v, uint ix, bool all, float c) {
    return all || x >= c || v == ix;
}

// logsoftmaxRow returns, for the row of logits starting at l0, the max m of the kept logits,
// S = sum exp(z) and A = sum exp(z) z over the kept columns with z = (x - m) / T, as (m, S, A).
vec3 logsoftmaxRow(uint l0, uint ix, bool all, float c) {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    float m = uintBitsToFloat(0xff800000u); // -inf
    for (uint v = l; v < p.V; v += W) {
        float x = logits[l0 + v];
        if (logsoftmaxKept(x, v, ix, all, c)) {
            m = max(m, x);
        }
    }
    m = groupMax(m);
    float s = 0.0;
    float a = 0.0;
    for (uint v = l; v < p.V; v += W) {
        float x = logits[l0 + v];
        if (logsoftmaxKept(x, v, ix, all, c)) {
            float z = (x - m) * p.invT;
            float e = exp(z);
            s += e;
            a += e * z;
        }
    }
    return vec3(m, groupSum2(s, a));
}
