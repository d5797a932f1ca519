// Bindings and parameters of the attention backward passes (flash and broadcast). Both recompute the
// probabilities p = exp(q·k*scale - lse) from q, k and the forward's per-query log-sum-exp,
// and use dsum = dout·out per query (the softmax backward's sum_j p_j dp_j): the query pass
// computes it and stores it for the key pass (KEY_PASS), which only reads it.
layout(set = 0, binding = 0) buffer Dqkv { float dqkv[]; };
layout(set = 0, binding = 1) readonly buffer Lse { float lse[]; };
#ifdef KEY_PASS
layout(set = 0, binding = 2) readonly buffer Dsum { float dsum[]; };
#else
layout(set = 0, binding = 2) buffer Dsum { float dsum[]; };
#endif
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
