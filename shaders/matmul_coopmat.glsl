// matmul_coopmat: matmul_tiled's product (same bindings, push constants, flags and split-K,
// see matmul_tiled.glsl) on the GPU's matrix units through VK_NV_cooperative_matrix, or
// VK_KHR_cooperative_matrix where the including file defines KHR (matmul_coopmat_khr*.comp):
// operands
// rounded to float16 as they are staged (the device's conversion, to nearest even on the
// devices measured; vk's TestProductPrecision checks it bit for bit against
// tensor.RoundFloat16), products summed in float32.
//
// A workgroup of SGM x SGN subgroups computes a BM x BN tile of out; each subgroup owns a
// WM x WN block of LM x LN accumulators, where LM x LN x LK is a shape the device enumerates
// (specialization constants 3 to 9; vk/matmul_coopmat.go chooses them). Owning many
// accumulators is what makes the matrix units pay: each fragment loaded from shared memory
// feeds WN (or WM) products. Each step stages a BK = KSTEPS*LK deep slice of both operands,
// read from global memory into registers a step ahead so the loads overlap the products, then
// stored to shared memory as float16 in the operand's own orientation (read as vec4s where
// matmul_coopmat_vec4.comp defines VEC4: rows at multiples of 4 elements) (a transposed operand is
// loaded column-major), so both the global reads and the shared stores are contiguous. Zero
// outside M, N and [kbeg, kend) handles the edge tiles. At the end each subgroup passes its
// accumulators one at a time through its own corner of shared memory so that the epilogue
// (bias, accumulate, GELU) is per element and bounds checked like matmul_tiled's.
//
// glslang before 13 has no GL_KHR_cooperative_matrix; the NV extension is what the Vulkan SDK of
// Debian bookworm compiles and validates. It needs the vulkanMemoryModel and shaderFloat16
// features (vk/coopmat.go enables them). The KHR variants are compiled by a newer glslang
// (shaders/compile.go) and need shaderFloat16 alone. Both extensions' names come from
// coopmat_types.glsl.
#include "coopmat_types.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint LM = 16;
layout(constant_id = 4) const uint LN = 16;
layout(constant_id = 5) const uint LK = 16;
layout(constant_id = 6) const uint WM = 4;     // accumulators a subgroup owns along M
layout(constant_id = 7) const uint WN = 4;     // and along N
layout(constant_id = 8) const uint SGM = 2;    // subgroups along M
layout(constant_id = 9) const uint SGN = 2;    // and along N: the host runs SGM*SGN subgroups
layout(constant_id = 10) const uint KSTEPS = 2; // LK-deep products a stage holds

#include "matmul_tiled_params.glsl"

const uint NT = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
const uint BM = SGM * WM * LM;
const uint BN = SGN * WN * LN;
const uint BK = KSTEPS * LK;
// Shared rows are padded by 8 halves (16 bytes): fragment loads stay 16-byte aligned and
// consecutive rows fall on different banks.
const uint PAD = 8;
const uint A_LOADS = BM * BK / NT; // elements of each operand an invocation stages a step
const uint B_LOADS = BK * BN / NT;

// The operand tiles, float16, in the orientation they are stored in: A as BM rows of BK
// (or, transposed, BK rows of BM), B as BK rows of BN (or BN rows of BK); each array covers
// the larger of its two orientations.
const uint A_SHARED = BM * (BK + PAD) > BK * (BM + PAD) ? BM * (BK + PAD) : BK * (BM + PAD);
const uint B_SHARED = BN * (BK + PAD) > BK * (BN + PAD) ? BN * (BK + PAD) : BK * (BN + PAD);
shared float16_t As[A_SHARED];
shared float16_t Bs[B_SHARED];
// One LM x LN accumulator per subgroup on its way out.
shared float Cs[SGM * SGN * LM * LN];

#ifdef VEC4
// Each invocation reads vec4s along the stored rows: 4 consecutive k of A (or m when
// transposed), 4 consecutive n of B (or k when transposed).
const uint A_VECS = A_LOADS / 4;
const uint B_VECS = B_LOADS / 4;
f16vec4 aReg[A_VECS];
f16vec4 bReg[B_VECS];

void loadA(uint abase, uint m0, uint k0, uint kend, bool ta) {
    for (uint j = 0; j < A_VECS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint row = ta ? 4 * (e % (BM / 4)) : e / (BK / 4);
        uint kk = ta ? e / (BM / 4) : 4 * (e % (BK / 4));
        uint m = m0 + row;
        uint k = k0 + kk;
        aReg[j] = f16vec4((m < p.M && k < kend) ? a4[(abase + (ta ? k * p.lda + m : m * p.lda + k)) / 4] : vec4(0.0));
    }
}

void storeA(bool ta) {
    for (uint j = 0; j < A_VECS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint s = ta ? (e / (BM / 4)) * (BM + PAD) + 4 * (e % (BM / 4)) : (e / (BK / 4)) * (BK + PAD) + 4 * (e % (BK / 4));
        for (uint c = 0; c < 4; c++) {
            As[s + c] = aReg[j][c];
        }
    }
}

void loadB(uint bbase, uint n0, uint k0, uint kend, bool tb) {
    for (uint j = 0; j < B_VECS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint col = tb ? e / (BK / 4) : 4 * (e % (BN / 4));
        uint kk = tb ? 4 * (e % (BK / 4)) : e / (BN / 4);
        uint n = n0 + col;
        uint k = k0 + kk;
        bReg[j] = f16vec4((n < p.N && k < kend) ? b4[(bbase + (tb ? n * p.ldb + k : k * p.ldb + n)) / 4] : vec4(0.0));
    }
}

void storeB(bool tb) {
    for (uint j = 0; j < B_VECS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint s = tb ? (e / (BK / 4)) * (BK + PAD) + 4 * (e % (BK / 4)) : (e / (BN / 4)) * (BN + PAD) + 4 * (e % (BN / 4));
        for (uint c = 0; c < 4; c++) {
            Bs[s + c] = bReg[j][c];
        }
    }
}
#else
float16_t aReg[A_LOADS];
float16_t bReg[B_LOADS];

// loadA reads A's rows [m0, m0+BM) x depth [k0, k0+BK) into aReg, zero outside M x [k0, kend):
// consecutive invocations read consecutive elements of the stored rows.
void loadA(uint abase, uint m0, uint k0, uint kend, bool ta) {
    for (uint j = 0; j < A_LOADS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint row = ta ? e % BM : e / BK;
        uint kk = ta ? e / BM : e % BK;
        uint m = m0 + row;
        uint k = k0 + kk;
        aReg[j] = float16_t((m < p.M && k < kend) ? a[abase + (ta ? k * p.lda + m : m * p.lda + k)] : 0.0);
    }
}

// storeA puts aReg into As as loadA read it: row-major (row, kk), or k-major when ta.
void storeA(bool ta) {
    for (uint j = 0; j < A_LOADS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint s = ta ? (e / BM) * (BM + PAD) + e % BM : (e / BK) * (BK + PAD) + e % BK;
        As[s] = aReg[j];
    }
}

// loadB reads B's depth [k0, k0+BK) x columns [n0, n0+BN) into bReg, zero outside.
void loadB(uint bbase, uint n0, uint k0, uint kend, bool tb) {
    for (uint j = 0; j < B_LOADS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint col = tb ? e / BK : e % BN;
        uint kk = tb ? e % BK : e / BN;
        uint n = n0 + col;
        uint k = k0 + kk;
        bReg[j] = float16_t((n < p.N && k < kend) ? b[bbase + (tb ? n * p.ldb + k : k * p.ldb + n)] : 0.0);
    }
}

// storeB puts bReg into Bs: row-major (kk, col), or column-major (col, kk) when tb.
void storeB(bool tb) {
    for (uint j = 0; j < B_LOADS; j++) {
        uint e = gl_LocalInvocationIndex + j * NT;
        uint s = tb ? (e / BK) * (BK + PAD) + e % BK : (e / BN) * (BN + PAD) + e % BN;
        Bs[s] = bReg[j];
    }
}
#endif

void main() {
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

    uint g = gl_SubgroupID;
    uint sm = (g / SGN) * WM * LM; // the subgroup's rows and columns within the tile
    uint sn = (g % SGN) * WN * LN;

    CM_ACC(LM, LN) acc[WM][WN];
    for (uint i = 0; i < WM; i++) {
        for (uint j = 0; j < WN; j++) {
            acc[i][j] = CM_ACC(LM, LN)(0.0);
        }
    }
    if (kbeg < kend) {
        loadA(abase, m0, kbeg, kend, ta);
        loadB(bbase, n0, kbeg, kend, tb);
    }
    for (uint k0 = kbeg; k0 < kend; k0 += BK) {
        barrier(); // the previous step's fragments are read
        storeA(ta);
        storeB(tb);
        barrier();
        if (k0 + BK < kend) { // the next step's operands arrive while this one multiplies
            loadA(abase, m0, k0 + BK, kend, ta);
            loadB(bbase, n0, k0 + BK, kend, tb);
        }
        for (uint ks = 0; ks < KSTEPS; ks++) {
            uint kk = ks * LK;
            CM_A(LM, LK) am[WM];
            CM_B(LK, LN) bm;
            for (uint i = 0; i < WM; i++) {
                uint row = sm + i * LM;
                if (ta) {
                    CM_LOAD(am[i], As, kk * (BM + PAD) + row, BM + PAD, CM_COL_MAJOR);
                } else {
                    CM_LOAD(am[i], As, row * (BK + PAD) + kk, BK + PAD, CM_ROW_MAJOR);
                }
            }
            for (uint j = 0; j < WN; j++) {
                uint col = sn + j * LN;
                if (tb) {
                    CM_LOAD(bm, Bs, col * (BK + PAD) + kk, BK + PAD, CM_COL_MAJOR);
                } else {
                    CM_LOAD(bm, Bs, kk * (BN + PAD) + col, BN + PAD, CM_ROW_MAJOR);
                }
                for (uint i = 0; i < WM; i++) {
                    acc[i][j] = CM_MULADD(am[i], bm, acc[i][j]);
                }
            }
        }
    }

    uint obase = p.off_out + z * p.stride_out;
    uint cs = g * LM * LN;
    for (uint i = 0; i < WM; i++) {
        for (uint j = 0; j < WN; j++) {
            CM_STORE(acc[i][j], Cs, cs, LN, CM_ROW_MAJOR);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < LM * LN; e += gl_SubgroupSize) {
                uint m = m0 + sm + i * LM + e / LN;
                uint n = n0 + sn + j * LN + e % LN;
                if (m >= p.M || n >= p.N) {
                    continue;
                }
                uint o = obase + m * p.ldo + n;
                float r = Cs[cs + e];
                if ((p.flags & 4u) != 0u) {
                    r = bias[p.off_bias + n] + r;
                }
                if ((p.flags & 8u) != 0u) {
                    r = outv[o] + r;
                }
                if ((p.flags & 16u) != 0u) {
                    r += bias[p.off_bias + n];
                }
                outv[o] = r;
                storeGelu(o, r);
            }
            subgroupBarrier(); // every lane has read the accumulator before the next is stored
        }
    }
}
