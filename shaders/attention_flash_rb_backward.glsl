// LOAD_QUADS, the register-blocked backward passes' tile loader, after their parameters.
#include "attention_backward_params.glsl"
#include "attention_flash_rb_common.glsl"

// LOAD_QUADS copies rows first.. of one head of qkv-like data (stride elements apart, clamped
// to row T-1) into a shared tile of quad rows; rows at or past T are zero when zero is set,
// and quads past the head are zero.
#define LOAD_QUADS(tile, rows, src, base, stride, first, zero)                        \
    for (uint i_ = gl_LocalInvocationID.x; i_ < (rows) * H4; i_ += WG) {              \
        uint r_ = i_ / H4;                                                            \
        uint d_ = i_ - r_ * H4;                                                       \
        uint t_ = (first) + r_;                                                       \
        tile[r_ * QSTR + d_] = QUAD(src, (base) + min(t_, p.T - 1u) * (stride), d_, !(zero) || t_ < p.T); \
    }

// dot4 adds the products of a and b to s, one multiply-add at a time in element order.
float dot4(float s, vec4 a, vec4 b) {
    s += a.x * b.x;
    s += a.y * b.y;
    s += a.z * b.z;
    s += a.w * b.w;
    return s;
}
