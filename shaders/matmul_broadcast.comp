#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_GOOGLE_include_directive : require
// matmul_broadcast: matmul_direct's product for a CPU implementation (lavapipe), which runs a
// subgroup's invocations as the lanes of SIMD registers. There every load from a buffer whose
// address may differ between invocations is a loop over the lanes (dozens of instructions,
// somewhat fewer per float for a vec4), while arithmetic and shuffles between lanes take one
// or two, so the kernel loads as few values per multiply-add as it can: lane l of a subgroup
// loads row r*SG + l of the workgroup's RM*SG rows of A, and the subgroup passes each row's
// value to every lane by a shuffle; each invocation loads its own TN columns of B. A k step
// thus loads RM + TN values for RM*SG*TN multiply-adds, against TM + TN for TM*TN in
// matmul_direct. The host sets MODE: the transposes, and vec4 loads and stores where it found
// the starts and row lengths of both operands and out, and N (and M where A is read across
// rows), multiples of 4.
//
// Every output is summed in increasing k from the same start as matmul_direct.comp: the same
// bits. Operand layout and push constants are matmul_direct.comp's: A at
// a[off_a + z*stride_a + m*lda + k] (or k*lda + m when transposed), B at
// b[off_b + z*stride_b + k*ldb + n] (or n*ldb + k), out at outv[off_out + z*stride_out +
// m*ldo + n]; flags 4 start the sum from bias[off_bias + n], 8 add the sum to the existing
// out, 16 add bias after that, 32 row tiles along x, 64 also store GELU of each output
// (matmul_gelu.glsl; the transposes come through MODE).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint RM = 4; // row groups of SG rows
layout(constant_id = 4) const uint TN = 4; // columns per invocation
layout(constant_id = 5) const uint SG = 8; // the subgroup size
layout(constant_id = 6) const uint MODE = 0; // 1 A transposed, 2 B transposed, 4 vec4s

#define TA ((MODE & 1u) != 0u)
#define TB ((MODE & 2u) != 0u)
#define V4 ((MODE & 4u) != 0u)
// Macros, not boolean constants: spirv-opt drops boolean specialization constants that only
// functions other than main use. The vec4 loads: along k for A stored by rows and for B
// transposed (the 4 depths of a step4), along m for transposed A (4 rows of a row group, so
// RM a multiple of 4), and along n for B stored by rows (4 of an invocation's columns, then
// consecutive, so TN a multiple of 4).
#define A4K (V4 && !TA)
#define A4M (V4 && TA && (RM & 3u) == 0u)
#define B4K (V4 && TB)
#define B4N (V4 && !TB && (TN & 3u) == 0u)
// OUT4: an invocation's columns are consecutive, stored as vec4s of out.
#define OUT4 (V4 && (TN & 3u) == 0u)
const uint TM = RM * SG;
const uint RQ = (RM + 3u) / 4u; // vec4s of rows per lane with A4M (never 0: arrays need a size)
const uint TQ = (TN + 3u) / 4u; // vec4s of columns per invocation with OUT4 (likewise)
const uint WX = gl_WorkGroupSize.x;

layout(set = 0, binding = 0) buffer Out { float outv[]; };
layout(set = 0, binding = 0) buffer Out4 { vec4 outv4[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) readonly buffer B4 { vec4 b4[]; };
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

float acc[TM][TN];
uint arow[RM]; // where this lane's row of each row group starts (with A4M, r = 4g: its vec4)
uint bcol[TN]; // where each column of B starts (with B4N, j = 4h: its vec4)

// column j of the invocation: its TN consecutive columns with OUT4, else every WX-th.
uint column(uint n0, uint j) {
    return OUT4 ? n0 + gl_LocalInvocationID.x * TN + j : n0 + gl_LocalInvocationID.x + j * WX;
}

// rowOf is the row of the tile that lane s's av[r] holds.
uint rowOf(uint r, uint s) {
    return A4M ? (r / 4u) * 4u * SG + 4u * s + r % 4u : r * SG + s;
}

// loadA reads this lane's rows of A at depth k.
void loadA(uint k, out float av[RM]) {
    if (A4M) {
        [[unroll]] for (uint r = 0; r < RM; r += 4u) {
            vec4 v = a4[(arow[r] + k * p.lda) >> 2];
            av[r] = v.x;
            av[r + 1u] = v.y;
            av[r + 2u] = v.z;
            av[r + 3u] = v.w;
        }
    } else {
        [[unroll]] for (uint r = 0; r < RM; r++) {
            av[r] = a[arow[r] + (TA ? k * p.lda : k)];
        }
    }
}

// loadB reads this invocation's columns of B at depth k.
void loadB(uint k, out float bv[TN]) {
    if (B4N) {
        [[unroll]] for (uint j = 0; j < TN; j += 4u) {
            vec4 v = b4[(bcol[j] + k * p.ldb) >> 2];
            bv[j] = v.x;
            bv[j + 1u] = v.y;
            bv[j + 2u] = v.z;
            bv[j + 3u] = v.w;
        }
    } else {
        [[unroll]] for (uint j = 0; j < TN; j++) {
            bv[j] = b[bcol[j] + (TB ? k : k * p.ldb)];
        }
    }
}

// step4 adds depths k..k+3 to every accumulator, each loaded and stored once for the four
// (lavapipe keeps most of them on the stack), in increasing k. Measured on Mesa 25: steps of 2
// depths are ~12% slower and of 8 twice as slow (spills); the loads take at most ~12% of the
// time and the shuffles at most ~20% (subgroupBroadcast is no cheaper), so the multiply-adds
// and the accumulators' trips to the stack bound it. Slower still: rows of A read at a
// workgroup-uniform address instead of shuffled (6x), the lanes' loop left rolled so that
// accumulators are indexed at run time (3.5x), the k loop unrolled twice (2.5x).
void step4(uint k) {
    float av[RM][4];
    float bv[TN][4];
    if (A4K) {
        [[unroll]] for (uint r = 0; r < RM; r++) {
            vec4 v = a4[(arow[r] + k) >> 2];
            av[r] = float[4](v.x, v.y, v.z, v.w);
        }
    } else {
        [[unroll]] for (uint q = 0; q < 4u; q++) {
            float col[RM];
            loadA(k + q, col);
            [[unroll]] for (uint r = 0; r < RM; r++) {
                av[r][q] = col[r];
            }
        }
    }
    if (B4K) {
        [[unroll]] for (uint j = 0; j < TN; j++) {
            vec4 v = b4[(bcol[j] + k) >> 2];
            bv[j] = float[4](v.x, v.y, v.z, v.w);
        }
    } else {
        [[unroll]] for (uint q = 0; q < 4u; q++) {
            float row[TN];
            loadB(k + q, row);
            [[unroll]] for (uint j = 0; j < TN; j++) {
                bv[j][q] = row[j];
            }
        }
    }
    [[unroll]] for (uint r = 0; r < RM; r++) {
        [[unroll]] for (uint s = 0; s < SG; s++) {
            float x[4];
            [[unroll]] for (uint q = 0; q < 4u; q++) {
                x[q] = subgroupShuffle(av[r][q], s);
            }
            uint i = rowOf(r, s);
            [[unroll]] for (uint j = 0; j < TN; j++) {
                float t = acc[i][j];
                [[unroll]] for (uint q = 0; q < 4u; q++) {
                    t += x[q] * bv[j][q];
                }
                acc[i][j] = t;
            }
        }
    }
}

// step1 adds depth k to every accumulator.
void step1(uint k) {
    float av[RM];
    float bv[TN];
    loadA(k, av);
    loadB(k, bv);
    [[unroll]] for (uint r = 0; r < RM; r++) {
        [[unroll]] for (uint s = 0; s < SG; s++) {
            float x = subgroupShuffle(av[r], s);
            uint i = rowOf(r, s);
            [[unroll]] for (uint j = 0; j < TN; j++) {
                acc[i][j] += x * bv[j];
            }
        }
    }
}

void main() {
    // flags & 32: the host laid the row tiles along x, so that consecutive workgroups share
    // their columns of B and a B larger than the caches is read once.
    uvec2 tile = (p.flags & 32u) != 0u ? gl_WorkGroupID.yx : gl_WorkGroupID.xy;
    uint m0 = tile.y * TM;
    uint n0 = tile.x * (WX * TN);
    uint lane = gl_SubgroupInvocationID;
    uint z = gl_WorkGroupID.z;

    // Rows and columns past the edge read row or column 0 instead and are not stored (with
    // vec4 loads the host made M or N a multiple of 4, so a vec4 is wholly in or out).
    uint as = TA ? 1u : p.lda;
    uint bs = TB ? p.ldb : 1u;
    [[unroll]] for (uint r = 0; r < RM; r++) {
        uint m = m0 + rowOf(A4M ? r & ~3u : r, lane);
        arow[r] = p.off_a + z * p.stride_a + (m < p.M ? m : 0u) * as;
    }
    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint n = column(n0, j);
        if (B4N) {
            n = column(n0, j & ~3u);
        }
        bcol[j] = p.off_b + z * p.stride_b + (n < p.N ? n : 0u) * bs;
    }

    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint n = column(n0, j);
        float v = 0.0;
        if ((p.flags & 4u) != 0u && n < p.N) {
            v = bias[p.off_bias + n];
        }
        [[unroll]] for (uint i = 0; i < TM; i++) {
            acc[i][j] = v;
        }
    }

    uint k = 0;
    for (; k + 4u <= p.K; k += 4u) {
        step4(k);
    }
    for (; k < p.K; k++) {
        step1(k);
    }

    uint obase = p.off_out + z * p.stride_out;
    if (OUT4) {
        // An invocation's 4 consecutive columns are one vec4 of out (aligned by the host).
        // With flags & 8 all of its vec4s of out are read first, so that their cache misses
        // overlap instead of each stalling its row's store (the lm head's accumulated weight
        // gradient on lavapipe: 10 ms over the product without accumulation, then 6).
        vec4 prev[TM][TQ];
        if ((p.flags & 8u) != 0u) {
            [[unroll]] for (uint i = 0; i < TM; i++) {
                [[unroll]] for (uint j = 0; j < TN; j += 4u) {
                    uint m = min(m0 + i, p.M - 1u);
                    uint n = min(column(n0, j), p.N - 4u); // past the edge: read, never stored
                    prev[i][j / 4u] = outv4[(obase + m * p.ldo + n) >> 2];
                }
            }
        }
        [[unroll]] for (uint i = 0; i < TM; i++) {
            uint m = m0 + i;
            [[unroll]] for (uint j = 0; j < TN; j += 4u) {
                uint n = column(n0, j);
                if (m < p.M && n < p.N) {
                    uint o = (obase + m * p.ldo + n) >> 2;
                    vec4 r = vec4(acc[i][j], acc[i][j + 1u], acc[i][j + 2u], acc[i][j + 3u]);
                    if ((p.flags & 8u) != 0u) {
                        r = prev[i][j / 4u] + r;
                    }
                    if ((p.flags & 16u) != 0u) {
                        uint c = p.off_bias + n;
                        r += vec4(bias[c], bias[c + 1u], bias[c + 2u], bias[c + 3u]);
                    }
                    outv4[o] = r;
                    storeGelu4(o << 2, r);
                }
            }
        }
        return;
    }
    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint m = m0 + i;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            uint n = column(n0, j);
            if (m < p.M && n < p.N) {
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
}
