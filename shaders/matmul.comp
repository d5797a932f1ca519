#version 450
#extension GL_GOOGLE_include_directive : require
// matmul: one chunk of out = op(A) @ op(B) (+ bias) for the batch gl_WorkGroupID.z; the host
// splits products whose operands exceed a storage-buffer window into such chunks
// (vk/matmul.go).
//
// A workgroup of WX x WY invocations (specialization constants 0 and 1) computes a BM x BN tile
// of out, BM = WY*TM and BN = WX*TN: invocation (tx, ty) owns rows ty + i*WY and columns
// tx + j*WX (i < TM, j < TN), so neighbouring invocations read neighbouring shared-memory words
// and write neighbouring output columns. K is walked in steps of BK through two shared-memory
// buffers: the next step's operands are fetched into registers while the current one is
// multiplied, with one barrier per step. Every output is summed by one invocation in
// increasing k, so results do not depend on scheduling.
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
const uint BK = 8;
const uint PAD = 4; // keeps the transposing stores of row-major A and B tiles off one bank

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint NT = WX * WY;
const uint BM = WY * TM;
const uint BN = WX * TN;
const uint SA = BM + PAD; // row length of the k-major shared tiles
const uint SB = BN + PAD;
const uint LA = BM * BK / NT; // elements each invocation fetches per step: 64/WX and 64/WY
const uint LB = BN * BK / NT;
const uint LMAX = 8; // the host uses WX, WY >= 8

shared float As[2 * BK * SA];
shared float Bs[2 * BK * SB];

void main() {
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint tid = ty * WX + tx;
    uint m0 = gl_WorkGroupID.y * BM;
    uint n0 = gl_WorkGroupID.x * BN;
    uint z = gl_WorkGroupID.z;
    uint abase = p.off_a + z * p.stride_a;
    uint bbase = p.off_b + z * p.stride_b;
    bool ta = (p.flags & 1u) != 0u;
    bool tb = (p.flags & 2u) != 0u;

    float acc[TM][TN];
    for (uint j = 0; j < TN; j++) {
        uint n = n0 + tx + j * WX;
        float v = 0.0;
        if ((p.flags & 4u) != 0u && n < p.N) {
            v = bias[p.off_bias + n];
        }
        for (uint i = 0; i < TM; i++) {
            acc[i][j] = v;
        }
    }

    // The element e of a tile is mapped so that consecutive invocations read consecutive
    // addresses of the stored matrix: along k when rows are contiguous, else along m (or n).
    float ra[LMAX];
    float rb[LMAX];
    uint steps = (p.K + BK - 1) / BK;
    for (uint s = 0; s <= steps; s++) {
        // Fetch step s (if any) into registers.
        if (s < steps) {
            uint k0 = s * BK;
            for (uint l = 0; l < LA; l++) {
                uint e = tid + l * NT;
                uint row = ta ? e % BM : e / BK;
                uint kk = ta ? e / BM : e % BK;
                uint m = m0 + row;
                uint k = k0 + kk;
                float v = 0.0;
                if (m < p.M && k < p.K) {
                    v = a[abase + (ta ? k * p.lda + m : m * p.lda + k)];
                }
                ra[l] = v;
            }
            for (uint l = 0; l < LB; l++) {
                uint e = tid + l * NT;
                uint col = tb ? e / BK : e % BN;
                uint kk = tb ? e % BK : e / BN;
                uint n = n0 + col;
                uint k = k0 + kk;
                float v = 0.0;
                if (n < p.N && k < p.K) {
                    v = b[bbase + (tb ? n * p.ldb + k : k * p.ldb + n)];
                }
                rb[l] = v;
            }
        }
        // Multiply step s-1 from shared memory while the fetches are in flight.
        if (s > 0) {
            uint ao = ((s - 1u) & 1u) * BK * SA;
            uint bo = ((s - 1u) & 1u) * BK * SB;
            for (uint kk = 0; kk < BK; kk++) {
                float av[TM];
                float bv[TN];
                for (uint i = 0; i < TM; i++) {
                    av[i] = As[ao + kk * SA + ty + i * WY];
                }
                for (uint j = 0; j < TN; j++) {
                    bv[j] = Bs[bo + kk * SB + tx + j * WX];
                }
                for (uint i = 0; i < TM; i++) {
                    for (uint j = 0; j < TN; j++) {
                        acc[i][j] += av[i] * bv[j];
                    }
                }
            }
        }
        // Store step s into the other buffer; the barrier of step s-1 ordered its last reads.
        if (s < steps) {
            uint ao = (s & 1u) * BK * SA;
            uint bo = (s & 1u) * BK * SB;
            for (uint l = 0; l < LA; l++) {
                uint e = tid + l * NT;
                uint row = ta ? e % BM : e / BK;
                uint kk = ta ? e / BM : e % BK;
                As[ao + kk * SA + row] = ra[l];
            }
            for (uint l = 0; l < LB; l++) {
                uint e = tid + l * NT;
                uint col = tb ? e / BK : e % BN;
                uint kk = tb ? e % BK : e / BN;
                Bs[bo + kk * SB + col] = rb[l];
            }
        }
        barrier();
    }

    uint obase = p.off_out + z * p.stride_out;
    for (uint i = 0; i < TM; i++) {
        uint m = m0 + ty + i * WY;
        if (m >= p.M) {
            break;
        }
        for (uint j = 0; j < TN; j++) {
            uint n = n0 + tx + j * WX;
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
