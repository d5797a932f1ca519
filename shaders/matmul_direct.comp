#version 450
#extension GL_GOOGLE_include_directive : require
// matmul_direct: matmul.comp's product with the same interface and tiles, its operands read
// straight from the buffers instead of staged through shared memory, with no barrier. On a
// CPU implementation (lavapipe) the buffers sit in the CPU's caches already and a barrier
// switches between every SIMD batch of the workgroup, so this is the faster kernel there;
// GPUs keep the staged one. Invocation (tx, ty) owns rows ty + i*WY and columns tx + j*WX,
// summed in increasing k from the same start as matmul.comp: the same bits.
//
// A is read at a[off_a + z*stride_a + m*lda + k] (or k*lda + m when transposed), B at
// b[off_b + z*stride_b + k*ldb + n] (or n*ldb + k), out at outv[off_out + z*stride_out + m*ldo + n].
// flags: 1 A transposed, 2 B transposed, 4 start the sum from bias[off_bias + n],
// 8 add the sum to the existing out, 16 add bias[off_bias + n] after that, 64 also store GELU
// of each output (matmul_gelu.glsl).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
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
} p;

#include "matmul_gelu.glsl"

const uint TM = 8;
const uint TN = 8;

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint BM = WY * TM;
const uint BN = WX * TN;

void main() {
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint m0 = gl_WorkGroupID.y * BM + ty;
    uint n0 = gl_WorkGroupID.x * BN + tx;
    uint z = gl_WorkGroupID.z;
    uint abase = p.off_a + z * p.stride_a;
    uint bbase = p.off_b + z * p.stride_b;
    bool ta = (p.flags & 1u) != 0u;
    bool tb = (p.flags & 2u) != 0u;

    float acc[TM][TN];
    for (uint j = 0; j < TN; j++) {
        uint n = n0 + j * WX;
        float v = 0.0;
        if ((p.flags & 4u) != 0u && n < p.N) {
            v = bias[p.off_bias + n];
        }
        for (uint i = 0; i < TM; i++) {
            acc[i][j] = v;
        }
    }
    // Rows and columns past the edge read row or column 0 instead and are not stored.
    uint arow[TM];
    uint bcol[TN];
    for (uint i = 0; i < TM; i++) {
        uint m = m0 + i * WY;
        arow[i] = m < p.M ? m : 0u;
    }
    for (uint j = 0; j < TN; j++) {
        uint n = n0 + j * WX;
        bcol[j] = n < p.N ? n : 0u;
    }
    uint as = ta ? 1u : p.lda; // step between rows of op(A) ...
    uint ak = ta ? p.lda : 1u; // ... and along k
    uint bs = tb ? p.ldb : 1u;
    uint bk = tb ? 1u : p.ldb;
    for (uint k = 0; k < p.K; k++) {
        float av[TM];
        float bv[TN];
        for (uint i = 0; i < TM; i++) {
            av[i] = a[abase + arow[i] * as + k * ak];
        }
        for (uint j = 0; j < TN; j++) {
            bv[j] = b[bbase + bcol[j] * bs + k * bk];
        }
        for (uint i = 0; i < TM; i++) {
            for (uint j = 0; j < TN; j++) {
                acc[i][j] += av[i] * bv[j];
            }
        }
    }

    uint obase = p.off_out + z * p.stride_out;
    for (uint i = 0; i < TM; i++) {
        uint m = m0 + i * WY;
        if (m >= p.M) {
            break;
        }
        for (uint j = 0; j < TN; j++) {
            uint n = n0 + j * WX;
            if (n >= p.N) {
                break;
            }
            uint o = obase + m * p.ldo + n;
            float r = acc[i][j];
            if ((p.flags & 8u) != 0u) {
                r = outv[o] + r;
            }
            if ((p.flags & 16u) != 0u) {
                r += bias[p.off_bias + n];
            }
            outv[o] = r;
            storeGelu(o, r);
        }
    }
}
