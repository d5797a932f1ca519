#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
// matmul_broadcast: matmul_direct's product for a CPU implementation (lavapipe), which runs a
// subgroup's invocations as the lanes of SIMD registers. There every load from a buffer whose
// address may differ between invocations is a loop over the lanes (dozens of instructions),
// while arithmetic and shuffles between lanes take one or two, so the kernel loads as few
// values per multiply-add as it can: lane l of a subgroup loads row r*SG + l of the
// workgroup's RM*SG rows of A, and the subgroup passes each row's value to every lane by a
// shuffle; each invocation loads its own TN columns of B (tx + j*WX for invocation tx). A
// k step thus loads RM + TN values for RM*SG*TN multiply-adds, against TM + TN for TM*TN in
// matmul_direct.
//
// Every output is summed in increasing k from the same start as matmul_direct.comp: the same
// bits. Operand layout, push constants and flags are matmul_direct.comp's: A at
// a[off_a + z*stride_a + m*lda + k] (or k*lda + m when transposed), B at
// b[off_b + z*stride_b + k*ldb + n] (or n*ldb + k), out at outv[off_out + z*stride_out +
// m*ldo + n]; flags 1 A transposed, 2 B transposed, 4 start the sum from bias[off_bias + n],
// 8 add the sum to the existing out, 16 add bias after that, 32 row tiles along x.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint RM = 1; // row groups of SG rows
layout(constant_id = 4) const uint TN = 4; // columns per invocation
layout(constant_id = 5) const uint SG = 8; // the subgroup size

const uint TM = RM * SG;

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
} p;

const uint WX = gl_WorkGroupSize.x;

void main() {
    uint lane = gl_SubgroupInvocationID;
    // flags & 32: the host laid the row tiles along x, so that consecutive workgroups share
    // their columns of B and a B larger than the caches is read once.
    uvec2 tile = (p.flags & 32u) != 0u ? gl_WorkGroupID.yx : gl_WorkGroupID.xy;
    uint m0 = tile.y * TM;
    uint n0 = tile.x * (WX * TN) + gl_LocalInvocationID.x;
    uint z = gl_WorkGroupID.z;
    bool ta = (p.flags & 1u) != 0u;
    bool tb = (p.flags & 2u) != 0u;

    // Rows and columns past the edge read row or column 0 instead and are not stored.
    uint as = ta ? 1u : p.lda; // step between rows of op(A) ...
    uint ak = ta ? p.lda : 1u; // ... and along k
    uint bs = tb ? p.ldb : 1u;
    uint bk = tb ? 1u : p.ldb;
    uint arow[RM];
    uint bcol[TN];
    [[unroll]] for (uint r = 0; r < RM; r++) {
        uint m = m0 + r * SG + lane;
        arow[r] = p.off_a + z * p.stride_a + (m < p.M ? m : 0u) * as;
    }
    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint n = n0 + j * WX;
        bcol[j] = p.off_b + z * p.stride_b + (n < p.N ? n : 0u) * bs;
    }

    float acc[TM][TN];
    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint n = n0 + j * WX;
        float v = 0.0;
        if ((p.flags & 4u) != 0u && n < p.N) {
            v = bias[p.off_bias + n];
        }
        [[unroll]] for (uint i = 0; i < TM; i++) {
            acc[i][j] = v;
        }
    }
    for (uint k = 0; k < p.K; k++) {
        float av[RM];
        float bv[TN];
        [[unroll]] for (uint r = 0; r < RM; r++) {
            av[r] = a[arow[r] + k * ak];
        }
        [[unroll]] for (uint j = 0; j < TN; j++) {
            bv[j] = b[bcol[j] + k * bk];
        }
        [[unroll]] for (uint r = 0; r < RM; r++) {
            [[unroll]] for (uint s = 0; s < SG; s++) {
                float x = subgroupShuffle(av[r], s);
                [[unroll]] for (uint j = 0; j < TN; j++) {
                    acc[r * SG + s][j] += x * bv[j];
                }
            }
        }
    }

    uint obase = p.off_out + z * p.stride_out;
    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint m = m0 + i;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            uint n = n0 + j * WX;
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
            }
        }
    }
}
