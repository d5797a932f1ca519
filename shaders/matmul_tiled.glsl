// matmul_tiled: one chunk of out = op(A) @ op(B) (+ bias), the GPU kernel (vk/matmul.go);
// matmul_tiled.comp reads its operands as floats, matmul_tiled_vec4.comp (VEC4) as vec4s where
// the host found every row start and the contiguous extent of both operands a multiple of 4.
//
// A workgroup of WX x WY invocations computes a BM x BN tile of out, BM = WY*TM and BN = WX*TN,
// with TM, TN and the depth step BK specialization constants 3, 4 and 5 (the host's presets).
// Invocation (tx, ty) keeps its TM x TN outputs in registers: rows ty + i*WY, columns
// tx + j*WX, so neighbouring invocations read neighbouring shared-memory words and write
// neighbouring columns of out. Each step stages a BK-deep slice of both operands in shared
// memory, stored k-major with rows padded by PAD words so that the transposing stores do not
// fall on one bank. Every output is summed by one invocation in increasing k from the same
// start as matmul.comp and matmul_direct.comp, so without split-K all three give the same bits.
//
// Split-K: gl_WorkGroupID.z = batch*splits + s; split s sums k in [s*ksplit, (s+1)*ksplit) into
// its own out slice (z*stride_out), and matmul_splitk_reduce.comp adds the slices in order.
//
// A is read at a[off_a + zb*stride_a + m*lda + k] (or k*lda + m when transposed), B at
// b[off_b + zb*stride_b + k*ldb + n] (or n*ldb + k), out at outv[off_out + z*stride_out + m*ldo + n].
// flags: 1 A transposed, 2 B transposed, 4 start the sum from bias[off_bias + n],
// 8 add the sum to the existing out, 16 add bias[off_bias + n] after that, 64 also store GELU
// of each output (matmul_gelu.glsl). Compiled with ROUND (matmul_tiled_round*.comp), the
// kernel rounds both operands as it stages them to bfloat16 (specialization constant 6 = 1) or
// float16 (= 2): the products of --precision bf16 and fp16 (round16.glsl). The float32 kernels
// are compiled without it, so that their code is what it was.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint TM = 8;
layout(constant_id = 4) const uint TN = 8;
layout(constant_id = 5) const uint BK = 8;

#include "matmul_tiled_params.glsl"
#ifdef ROUND
#include "round16.glsl"
layout(constant_id = 6) const uint ROUND_MODE = 1;

// roundOperand rounds a staged operand as ROUND_MODE asks.
float roundOperand(float v) {
    return ROUND_MODE == 1 ? roundBfloat16(v) : roundFloat16(v);
}
#else
#define roundOperand(v) (v)
#endif


const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint NT = WX * WY;
const uint BM = WY * TM;
const uint BN = WX * TN;
const uint PAD = 4;
const uint SA = BM + PAD; // row length of the k-major shared tiles
const uint SB = BN + PAD;

shared float As[BK * SA];
shared float Bs[BK * SB];

// stageA copies A's rows [m0, m0+BM) x depth [k0, k0+BK) into As, zero outside M x [k0, kend).
// Consecutive invocations take consecutive addresses of the stored matrix.
void stageA(uint abase, uint m0, uint k0, uint kend, bool ta) {
#ifdef VEC4
    const uint BK4 = BK / 4;
    const uint BM4 = BM / 4;
    for (uint e = gl_LocalInvocationIndex; e < BM * BK4; e += NT) {
        uint row = ta ? 4 * (e % BM4) : e / BK4;
        uint kk = ta ? e / BM4 : 4 * (e % BK4);
        uint m = m0 + row;
        uint k = k0 + kk;
        vec4 v = vec4(0.0);
        if (m < p.M && k < kend) {
            v = a4[(abase + (ta ? k * p.lda + m : m * p.lda + k)) / 4];
        }
        for (uint c = 0; c < 4; c++) {
            As[ta ? kk * SA + row + c : (kk + c) * SA + row] = roundOperand(v[c]);
        }
    }
#else
    for (uint e = gl_LocalInvocationIndex; e < BM * BK; e += NT) {
        uint row = ta ? e % BM : e / BK;
        uint kk = ta ? e / BM : e % BK;
        uint m = m0 + row;
        uint k = k0 + kk;
        float v = 0.0;
        if (m < p.M && k < kend) {
            v = a[abase + (ta ? k * p.lda + m : m * p.lda + k)];
        }
        As[kk * SA + row] = roundOperand(v);
    }
#endif
}

// stageB copies B's depth [k0, k0+BK) x columns [n0, n0+BN) into Bs, zero outside.
void stageB(uint bbase, uint n0, uint k0, uint kend, bool tb) {
#ifdef VEC4
    const uint BK4 = BK / 4;
    const uint BN4 = BN / 4;
    for (uint e = gl_LocalInvocationIndex; e < BN * BK4; e += NT) {
        uint col = tb ? e / BK4 : 4 * (e % BN4);
        uint kk = tb ? 4 * (e % BK4) : e / BN4;
        uint n = n0 + col;
        uint k = k0 + kk;
        vec4 v = vec4(0.0);
        if (n < p.N && k < kend) {
            v = b4[(bbase + (tb ? n * p.ldb + k : k * p.ldb + n)) / 4];
        }
        for (uint c = 0; c < 4; c++) {
            Bs[tb ? (kk + c) * SB + col : kk * SB + col + c] = roundOperand(v[c]);
        }
    }
#else
    for (uint e = gl_LocalInvocationIndex; e < BN * BK; e += NT) {
        uint col = tb ? e / BK : e % BN;
        uint kk = tb ? e % BK : e / BN;
        uint n = n0 + col;
        uint k = k0 + kk;
        float v = 0.0;
        if (n < p.N && k < kend) {
            v = b[bbase + (tb ? n * p.ldb + k : k * p.ldb + n)];
        }
        Bs[kk * SB + col] = roundOperand(v);
    }
#endif
}

void main() {
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint m0 = gl_WorkGroupID.y * BM;
    uint n0 = gl_WorkGroupID.x * BN;
    uint z = gl_WorkGroupID.z;
    uint zb = z / p.splits;
    uint s = z % p.splits;
    uint abase = p.off_a + zb * p.stride_a;
    uint bbase = p.off_b + zb * p.stride_b;
    bool ta = (p.flags & 1u) != 0u;
    bool tb = (p.flags & 2u) != 0u;
    uint kbeg = s * p.ksplit;
    uint kend = min(p.K, kbeg + p.ksplit);

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

    for (uint k0 = kbeg; k0 < kend; k0 += BK) {
        stageA(abase, m0, k0, kend, ta);
        stageB(bbase, n0, k0, kend, tb);
        barrier();
        for (uint kk = 0; kk < BK; kk++) {
            float av[TM];
            float bv[TN];
            for (uint i = 0; i < TM; i++) {
                av[i] = As[kk * SA + ty + i * WY];
            }
            for (uint j = 0; j < TN; j++) {
                bv[j] = Bs[kk * SB + tx + j * WX];
            }
            for (uint i = 0; i < TM; i++) {
                for (uint j = 0; j < TN; j++) {
                    acc[i][j] += av[i] * bv[j];
                }
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
