// Register-blocked flash-attention backward, query pass: attention_flash_query's results (dq
// added to dqkv, dsum = dout·out per query stored for the key pass; same bindings and
// parameters) with each invocation computing blocks of scores and of dq in registers (see
// attention_flash_rb_common.glsl). The probabilities come from the saved log-sum-exps, so no
// row needs a reduction across invocations. Each dq is summed by one invocation in key
// order: no atomics.
shared vec4 sQ[BR * QSTR];
shared vec4 sO[BR * QSTR]; // dout
shared vec4 sK[BC * QSTR];
shared vec4 sV[BC * QSTR];
shared float sDS[BC * PSTR]; // a tile's p (dp - dsum), key-major

void queryBlock(uint b, uint h, uint qb, uint tx, uint ty) {
    uint hs = p.hs;
    uint hs4 = (hs + 3u) / 4u;
    uint C3 = 3u * p.C;
    uint first = qb * BR;
    uint qbase = p.off_qkv + b * p.T * C3 + h * hs;
    uint dbase = p.off_dout + b * p.T * p.C + h * hs;
    uint obase = p.off_out + b * p.T * p.C + h * hs;
    uint row = (b * p.NH + h) * p.T;

    LOAD_QUADS(sQ, BR, qkv, qbase, C3, first, false)
    LOAD_QUADS(sO, BR, dout, dbase, p.C, first, false)
    barrier();
    uint tq[TM];
    float L[TM];
    float D[TM];
    vec4 dq[TM][DN4];
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        tq[i] = min(first + ty + i * RG, p.T - 1u);
        L[i] = lse[p.off_lse + row + tq[i]];
        D[i] = 0.0;
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            dq[i][k] = vec4(0.0);
        }
    }
    for (uint d4 = 0u; d4 < hs4; d4++) {
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            D[i] = dot4(D[i], sO[(ty + i * RG) * QSTR + d4], QUAD(outv, obase + tq[i] * p.C, d4, true));
        }
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        if (tx == 0u && first + ty + i * RG < p.T) {
            dsum[p.off_dsum + row + tq[i]] = D[i];
        }
    }
    uint nkeys = min(first + BR, p.T);
    uint ntiles = (nkeys + BC - 1u) / BC;
    for (uint kt = 0u; kt < ntiles; kt++) {
        uint k0 = kt * BC;
        // The previous tile's readers are done with sK, sV and sDS.
        barrier();
        LOAD_QUADS(sK, BC, qkv, qbase + p.C, C3, k0, true)
        LOAD_QUADS(sV, BC, qkv, qbase + 2u * p.C, C3, k0, true)
        barrier();
        float s[TM][TN];
        float dp[TM][TN];
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                s[i][j] = 0.0;
                dp[i][j] = 0.0;
            }
        }
        for (uint d4 = 0u; d4 < hs4; d4++) {
            vec4 qv[TM];
            vec4 ov[TM];
            vec4 kv[TN];
            vec4 vv[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                qv[i] = sQ[(ty + i * RG) * QSTR + d4];
                ov[i] = sO[(ty + i * RG) * QSTR + d4];
            }
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                kv[j] = sK[(tx + j * CG) * QSTR + d4];
                vv[j] = sV[(tx + j * CG) * QSTR + d4];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    s[i][j] = dot4(s[i][j], qv[i], kv[j]);
                    dp[i][j] = dot4(dp[i][j], ov[i], vv[j]);
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                uint c = tx + j * CG;
                float pr = k0 + c <= tq[i] ? exp(s[i][j] * p.scale - L[i]) : 0.0;
                sDS[c * PSTR + ty + i * RG] = pr * (dp[i][j] - D[i]);
            }
        }
        barrier();
        for (uint c = 0u; c < BC; c++) {
            float ds[TM];
            vec4 kv[DN4];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                ds[i] = sDS[c * PSTR + ty + i * RG];
            }
            [[unroll]] for (uint k = 0u; k < DN4; k++) {
                kv[k] = sK[c * QSTR + tx + k * CG];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint k = 0u; k < DN4; k++) {
                    dq[i][k] += ds[i] * kv[k];
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        bool live = first + ty + i * RG < p.T;
        uint g = p.off_dqkv + b * p.T * C3 + tq[i] * C3 + h * hs;
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            uint d = 4u * (tx + k * CG);
            vec4 o = dq[i][k] * p.scale;
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                if (live && d + e < hs) {
                    dqkv[g + d + e] += o[e];
                }
            }
        }
    }
    // Before the next block overwrites the tiles.
    barrier();
}

void main() {
    uint tx = gl_LocalInvocationID.x % CG;
    uint ty = gl_LocalInvocationID.x / CG;
    uint nqb = (p.T + BR - 1u) / BR;
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
