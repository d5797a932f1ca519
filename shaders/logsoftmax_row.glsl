// logsoftmax_row.glsl: the row statistics logsoftmax_gather and logsoftmax_gather_backward
// share, one code for both so that the backward gets the forward's bits. The including kernel
// declares logits[], targets[], cut[], p.V, p.Vp, p.invT, p.has_cut, p.off_logits, p.off_tg and
// p.off_cut, and includes reduce.glsl first.

// logsoftmaxKept reports whether column v, with logit x, is in the row's kept set: every
// column when all, else those at or above the cutoff c, and the target ix.
bool logsoftmaxKept(float x, uint v, uint ix, bool all, float c) {
    return all || x >= c || v == ix;
}

// logsoftmaxRescale moves sums S = sum exp(z) and A = sum exp(z) z, taken with z = (x - m) / T,
// to a max d/T larger: z drops by d, so S becomes S e^-d and A becomes (A - d S) e^-d. Sums of
// nothing stay 0 (d may be infinite then).
vec2 logsoftmaxRescale(vec2 sa, float d) {
    if (sa.x == 0.0) {
        return sa;
    }
    float r = exp(-d);
    return vec2(sa.x * r, (sa.y - d * sa.x) * r);
}

// logsoftmaxRow returns, for the row of logits starting at l0, the max m of the kept logits,
// S = sum exp(z) and A = sum exp(z) z over the kept columns with z = (x - m) / T, as (m, S, A).
// One pass over the row (an online softmax): each lane keeps its running max and rescales its
// sums when the max grows; the lanes' sums are then rescaled to the row's max and added.
vec3 logsoftmaxRow(uint l0, uint ix, bool all, float c) {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    float m = uintBitsToFloat(0xff800000u); // -inf
    vec2 sa = vec2(0.0);
    for (uint v = l; v < p.V; v += W) {
        float x = logits[l0 + v];
        if (!logsoftmaxKept(x, v, ix, all, c)) {
            continue;
        }
        if (x > m) {
            sa = logsoftmaxRescale(sa, (x - m) * p.invT) + vec2(1.0, 0.0); // z = 0 at the new max
            m = x;
        } else {
            float z = (x - m) * p.invT;
            float e = exp(z);
            sa += vec2(e, e * z);
        }
    }
    float rowMax = groupMax(m);
    sa = logsoftmaxRescale(sa, (rowMax - m) * p.invT);
    return vec3(rowMax, groupSum2(sa.x, sa.y));
}

// LogsoftmaxRow is one row's kept set and statistics: its logits start at l0, ix is the
// target, the kept set is every column when all, else those at or above c (and ix); m, S = sa.x
// and A = sa.y are as logsoftmaxRow returns them.
struct LogsoftmaxRow {
    uint l0;
    uint ix;
    bool all;
    float c;
    float m;
    vec2 sa;
};

// logsoftmaxRowAt gathers row's target and cutoff and reduces the row.
LogsoftmaxRow logsoftmaxRowAt(uint row) {
    LogsoftmaxRow r;
    r.l0 = p.off_logits + row * p.Vp;
    r.ix = uint(targets[p.off_tg + row]);
    r.all = p.has_cut == 0;
    r.c = r.all ? 0.0 : cut[p.off_cut + row];
    vec3 msa = logsoftmaxRow(r.l0, r.ix, r.all, r.c);
    r.m = msa.x;
    r.sa = msa.yz;
    return r;
}
