// Register-blocked flash-attention forward: attention_flash_forward's results (output and
// log-sum-exp, same bindings and parameters, the same online softmax over key tiles starting
// at key 0) with each invocation computing blocks of scores and outputs in registers (see
// attention_flash_rb_common.glsl). The CG invocations of a row are neighbours in one
// subgroup: its maximum and sum are reduced by shuffles (xor butterflies, which give every
// lane the same bits), not through shared memory.
//
// Each query's bits depend only on its own row and the key tiles, so a query decoded against
// the KV cache gets the bits of the full-sequence forward, as with the other kernels.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "attention_forward_params.glsl"
#include "attention_flash_rb_common.glsl"

shared vec4 sQ[BR * QSTR];
shared vec4 sK[BC * QSTR];
shared vec4 sV[BC * H4];
shared float sP[BC * PSTR]; // a tile's exponentials, key-major

float rowMax(float x) {
    [[unroll]] for (uint b = 0u; b < CG_LOG2; b++) {
        x = max(x, subgroupShuffleXor(x, 1u << b));
    }
    return x;
}

float rowSum(float x) {
    [[unroll]] for (uint b = 0u; b < CG_LOG2; b++) {
        x += subgroupShuffleXor(x, 1u << b);
    }
    return x;
}

void queryBlock(uint b, uint h, uint qb, uint tx, uint ty) {
    uint tid = gl_LocalInvocationID.x;
    uint hs = p.hs;
    uint hs4 = (hs + 3u) / 4u;
    uint first = qb * BR;
    uint kbase = p.off_k + b * p.kvbatch + h * hs;
    uint vbase = p.off_v + b * p.kvbatch + h * hs;

    // Rows past the last query repeat it and are not written; quads past the head are zero.
    for (uint i = tid; i < BR * H4; i += WG) {
        uint rr = i / H4;
        uint d4 = i - rr * H4;
        uint t = min(first + rr, p.Tq - 1u);
        sQ[rr * QSTR + d4] = QUAD(q, p.off_q + (b * p.Tq + t) * p.qstride + h * hs, d4, true);
    }
    uint qpos[TM];
    float m[TM];
    float l[TM];
    vec4 acc[TM][DN4];
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        qpos[i] = p.pos + min(first + ty + i * RG, p.Tq - 1u);
        m[i] = NEG_INF;
        l[i] = 0.0;
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            acc[i][k] = vec4(0.0);
        }
    }
    uint nkeys = p.pos + min(first + BR, p.Tq); // keys seen by the block's last query
    uint ntiles = (nkeys + BC - 1u) / BC;
    for (uint kt = 0u; kt < ntiles; kt++) {
        uint k0 = kt * BC;
        // The previous tile's readers are done with sK, sV and sP.
        barrier();
        for (uint i = tid; i < BC * H4; i += WG) {
            uint c = i / H4;
            uint d4 = i - c * H4;
            uint key = k0 + c;
            bool inside = key < nkeys;
            sK[c * QSTR + d4] = QUAD(k, kbase + key * p.kvstride, d4, inside);
            sV[c * H4 + d4] = QUAD(v, vbase + key * p.kvstride, d4, inside);
        }
        barrier();
        float s[TM][TN];
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                s[i][j] = 0.0;
            }
        }
        for (uint d4 = 0u; d4 < hs4; d4++) {
            vec4 qv[TM];
            vec4 kv[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                qv[i] = sQ[(ty + i * RG) * QSTR + d4];
            }
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                kv[j] = sK[(tx + j * CG) * QSTR + d4];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    float a = s[i][j];
                    a += qv[i].x * kv[j].x;
                    a += qv[i].y * kv[j].y;
                    a += qv[i].z * kv[j].z;
                    a += qv[i].w * kv[j].w;
                    s[i][j] = a;
                }
            }
        }
        // Key 0 is in every row's first tile, so mnew is finite from there on, and a tile
        // wholly above a row's diagonal leaves its state as it was (alpha 1, exponentials 0).
        float alpha[TM];
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            float mt = NEG_INF;
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                s[i][j] = k0 + tx + j * CG <= qpos[i] ? s[i][j] * p.scale : NEG_INF;
                mt = max(mt, s[i][j]);
            }
            float mnew = max(m[i], rowMax(mt));
            alpha[i] = exp(m[i] - mnew);
            float part = 0.0;
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                float e = exp(s[i][j] - mnew);
                sP[(tx + j * CG) * PSTR + ty + i * RG] = e;
                part += e;
            }
            l[i] = l[i] * alpha[i] + rowSum(part);
            m[i] = mnew;
        }
        barrier();
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            [[unroll]] for (uint k = 0u; k < DN4; k++) {
                acc[i][k] *= alpha[i];
            }
        }
        for (uint c = 0u; c < BC; c++) {
            float pr[TM];
            vec4 vv[DN4];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                pr[i] = sP[c * PSTR + ty + i * RG];
            }
            [[unroll]] for (uint k = 0u; k < DN4; k++) {
                vv[k] = sV[c * H4 + tx + k * CG];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint k = 0u; k < DN4; k++) {
                    acc[i][k] += pr[i] * vv[k];
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        uint t = first + ty + i * RG;
        bool live = t < p.Tq;
        float inv = 1.0 / l[i];
        uint o0 = p.off_out + (b * p.Tq + t) * p.ostride + h * hs;
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            uint d = 4u * (tx + k * CG);
            vec4 o = acc[i][k] * inv;
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                if (live && d + e < hs) {
                    outv[o0 + d + e] = o[e];
                }
            }
        }
        if (live && p.write_lse != 0u && tx == 0u) {
            lse[p.off_lse + (b * p.NH + h) * p.Tq + t] = m[i] + log(l[i]);
        }
    }
    // Before the next block overwrites sQ.
    barrier();
}

void main() {
    // A row's CG invocations are consecutive lanes of one subgroup, which the host checks
    // has at least CG; the subgroups, powers of two up to 128, tile the 64 invocations.
    uint lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint tx = lane % CG;
    uint ty = lane / CG;
    uint nqb = (p.Tq + BR - 1u) / BR;
    uint h = gl_WorkGroupID.y;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        for (uint which = 0u; which < 2u; which++) {
            bool ok;
            uint qb = blockOf(gl_WorkGroupID.x, nqb, which, ok);
            if (ok) {
                queryBlock(b, h, qb, tx, ty);
            }
        }
    }
}
