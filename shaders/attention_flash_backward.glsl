// Bindings and parameters of the two flash-attention backward passes. Both recompute the
// probabilities p = exp(q·k*scale - lse) from q, k and the forward's per-query log-sum-exp,
// and use dsum = dout·out per query (the softmax backward's sum_j p_j dp_j): the query pass
// computes it and stores it for the key pass.
layout(set = 0, binding = 0) buffer Dqkv { float dqkv[]; };
layout(set = 0, binding = 1) readonly buffer Lse { float lse[]; };
layout(set = 0, binding = 2) buffer Dsum { float dsum[]; };
layout(set = 0, binding = 3) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 4) readonly buffer Qkv { float qkv[]; };
layout(set = 0, binding = 5) readonly buffer Out { float outv[]; };
layout(push_constant) uniform Params {
    uint T;
    uint NH;
    uint hs;
    uint C;
    uint B; // sequences in this dispatch
    uint off_dqkv;
    uint off_lse;
    uint off_dsum;
    uint off_dout;
    uint off_qkv;
    uint off_out;
    float scale;
} p;

// LOAD_ROWS copies rows first.. of one head of qkv-like data (stride elements apart, clamped to
// row T-1) into a shared tile; rows at or past T are zero when zero is set.
#define LOAD_ROWS(tile, rows, src, base, stride, first, zero)                  \
    for (uint i_ = gl_LocalInvocationID.x; i_ < (rows) * p.hs; i_ += WG) {     \
        uint r_ = i_ / p.hs;                                                   \
        uint d_ = i_ - r_ * p.hs;                                              \
        uint t_ = (first) + r_;                                                \
        bool past_ = t_ >= p.T;                                                \
        float x_ = src[(base) + min(t_, p.T - 1u) * (stride) + d_];            \
        tile[r_ * STR + d_] = (past_ && (zero)) ? 0.0 : x_;                    \
    }
