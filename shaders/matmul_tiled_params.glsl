// The bindings and push constants of matmul_tiled and matmul_coopmat (vk's matmulTiledPush),
// operands read as vec4s where VEC4 is defined, and the GELU epilogue (matmul_gelu.glsl).
layout(set = 0, binding = 0) buffer Out { float outv[]; };
#ifdef VEC4
layout(set = 0, binding = 1) readonly buffer A { vec4 a4[]; };
layout(set = 0, binding = 2) readonly buffer B { vec4 b4[]; };
#else
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
#endif
layout(set = 0, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;
    uint lda;
    uint ldb;
    uint ldo;
    uint off_out;
    uint off_a;
    uint off_b;
    uint off_bias;
    uint stride_out;
    uint stride_a;
    uint stride_b;
    uint flags;
    uint off_gelu;
    float scaling; // GELU's, from the host
    uint splits;
    uint ksplit;
} p;

#include "matmul_gelu.glsl"
