#version 450
// matmul_coopmat: matmul_tiled's product (same bindings, push constants, flags and split-K,
// see matmul_tiled.glsl) on the GPU's matrix units through VK_NV_cooperative_matrix: operands
// rounded to float16 as they are staged, products summed in float32.
//
// A workgroup of 4 subgroups computes a BM x BN tile of out, BM = 4*LM and BN = 4*LN, where
// LM x LN x LK (specialization constants 3, 4 and 5) is a shape the device enumerates. Each
// subgroup owns a 2LM x 2LN quarter as 2 x 2 accumulators. Each step stages a BK = LK deep slice
// of both operands in shared memory, row-major and converted to float16, zero outside M, N and
// [kbeg, kend), which handles the edge tiles and both transposes. At the end the accumulators go
// through shared memory so that the epilogue (bias, accumulate, GELU) is per element and bounds
// checked like matmul_tiled's.
//
// glslang before 13 has no GL_KHR_cooperative_matrix; the NV extension is what the Vulkan SDK of
// Debian bookworm compiles and validates. It needs the vulkanMemoryModel and shaderFloat16
// features (vk/coopmat.go enables them).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint LM = 16;
layout(constant_id = 4) const uint LN = 16;
layout(constant_id = 5) const uint LK = 16;

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
    uint splits;
    uint ksplit;
} p;

#include "matmul_gelu.glsl"

const uint NT = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
const uint BM = 4 * LM;
const uint BN = 4 * LN;
const uint BK = LK;

shared float16_t As[BM * BK]; // row-major: (row, kk) at row*BK + kk
shared float16_t Bs[BK * BN]; // row-major: (kk, col) at kk*BN + col
shared float Cs[BM * BN];     // the sums, row-major

// stageA rounds A's rows [m0, m0+BM) x depth [k0, k0+BK) into As, zero outside M x [k0, kend).
void stageA(uint abase, uint m0, uint k0, uint kend, bool ta) {
    for (uint e = gl_LocalInvocationIndex; e < BM * BK; e += NT) {
        uint row = ta ? e % BM : e / BK;
        uint kk = ta ? e / BM : e % BK;
        uint m = m0 + row;
        uint k = k0 + kk;
        float v = 0.0;
        if (m < p.M && k < kend) {
            v = a[abase + (ta ? k * p.lda + m : m * p.lda + k)];
        }
        As[row * BK + kk] = float16_t(v);
    }
}

// stageB rounds B's depth [k0, k0+BK) x columns [n0, n0+BN) into Bs, zero outside.
void stageB(uint bbase, uint n0, uint k0, uint kend, bool tb) {
    for (uint e = gl_LocalInvocationIndex; e < BN * BK; e += NT) {
        uint col = tb ? e / BK : e % BN;
        uint kk = tb ? e % BK : e / BN;
        uint n = n0 + col;
        uint k = k0 + kk;
        float v = 0.0;
        if (n < p.N && k < kend) {
            v = b[bbase + (tb ? n * p.ldb + k : k * p.ldb + n)];
        }
        Bs[kk * BN + col] = float16_t(v);
    }
}

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

    // The host runs 4 subgroups a workgroup: subgroup g owns rows sm.., columns sn.. of the tile.
    uint g = gl_SubgroupID;
    uint sm = (g >> 1) * 2 * LM;
    uint sn = (g & 1u) * 2 * LN;

    fcoopmatNV<32, gl_ScopeSubgroup, LM, LN> acc[2][2];
    for (uint i = 0; i < 2; i++) {
        for (uint j = 0; j < 2; j++) {
            acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, LM, LN>(0.0);
        }
    }
    for (uint k0 = kbeg; k0 < kend; k0 += BK) {
        stageA(abase, m0, k0, kend, ta);
        stageB(bbase, n0, k0, kend, tb);
        barrier();
        fcoopmatNV<16, gl_ScopeSubgroup, LM, LK> am[2];
        fcoopmatNV<16, gl_ScopeSubgroup, LK, LN> bm[2];
        for (uint i = 0; i < 2; i++) {
            coopMatLoadNV(am[i], As, (sm + i * LM) * BK, BK, false);
        }
        for (uint j = 0; j < 2; j++) {
            coopMatLoadNV(bm[j], Bs, sn + j * LN, BN, false);
        }
        for (uint i = 0; i < 2; i++) {
            for (uint j = 0; j < 2; j++) {
                acc[i][j] = coopMatMulAddNV(am[i], bm[j], acc[i][j]);
            }
        }
        barrier();
    }
    for (uint i = 0; i < 2; i++) {
        for (uint j = 0; j < 2; j++) {
            coopMatStoreNV(acc[i][j], Cs, (sm + i * LM) * BN + sn + j * LN, BN, false);
        }
    }
    barrier();

    uint obase = p.off_out + z * p.stride_out;
    for (uint e = gl_LocalInvocationIndex; e < BM * BN; e += NT) {
        uint m = m0 + e / BN;
        uint n = n0 + e % BN;
        if (m >= p.M || n >= p.N) {
            continue;
        }
        uint o = obase + m * p.ldo + n;
        float r = Cs[e];
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
}
