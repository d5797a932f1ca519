// LOAD_ROWS, the flash backward passes' tile loader, after their parameters.
#include "attention_backward_params.glsl"

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
