// Register-blocked flash-attention backward, key pass: attention_flash_key's results (dk and
// dv added to dqkv; same bindings and parameters) with each invocation computing blocks of
// scores, of dk and of dv in registers (see attention_flash_rb_common.glsl). Query tiles start
// at the block's first key, so BR is a multiple of BC. Each value is summed by one
// invocation in query order: no atomics.
shared vec4 sK[BR * QSTR];
shared vec4 sV[BR * QSTR];
shared vec4 sQ[BC * QSTR];
shared vec4 sO[BC * QSTR]; // dout
shared float sP[BC * PSTR];  // a tile's probabilities, query-major
shared float sDS[BC * PSTR]; // and p (dp - dsum)
shared float sL[BC];
shared float sD[BC];

void keyBlock(uint b, uint h, uint kb, uint tx, uint ty) {
    uint tid = gl_LocalInvocationID.x;
    uint hs = p.hs;
    uint hs4 = (hs + 3u) / 4u;
    uint C3 = 3u * p.C;
    uint first = kb * BR;
    uint qbase = p.off_qkv + b * p.T * C3 + h * hs;
    uint dbase = p.off_dout + b * p.T * p.C + h * hs;
    uint row = (b * p.NH + h) * p.T;

    LOAD_QUADS(sK, BR, qkv, qbase + p.C, C3, first, false)
    LOAD_QUADS(sV, BR, qkv, qbase + 2u * p.C, C3, first, false)
    uint tk[TM];
    vec4 dk[TM][DN4];
    vec4 dv[TM][DN4];
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        tk[i] = min(first + ty + i * RG, p.T - 1u);
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            dk[i][k] = vec4(0.0);
            dv[i][k] = vec4(0.0);
        }
    }
    uint nqt = (p.T + BC - 1u) / BC;
    for (uint qt = first / BC; qt < nqt; qt++) {
        uint q0 = qt * BC;
        // The previous tile's readers are done with sQ, sO, sP, sDS, sL and sD.
        barrier();
        LOAD_QUADS(sQ, BC, qkv, qbase, C3, q0, true)
        LOAD_QUADS(sO, BC, dout, dbase, p.C, q0, true)
        if (tid < BC) {
            bool inside = q0 + tid < p.T;
            sL[tid] = inside ? lse[p.off_lse + row + q0 + tid] : 0.0;
            sD[tid] = inside ? dsum[p.off_dsum + row + q0 + tid] : 0.0;
        }
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
            vec4 kv[TM];
            vec4 vv[TM];
            vec4 qv[TN];
            vec4 ov[TN];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                kv[i] = sK[(ty + i * RG) * QSTR + d4];
                vv[i] = sV[(ty + i * RG) * QSTR + d4];
            }
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                qv[j] = sQ[(tx + j * CG) * QSTR + d4];
                ov[j] = sO[(tx + j * CG) * QSTR + d4];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    s[i][j] = dot4(s[i][j], qv[j], kv[i]);
                    dp[i][j] = dot4(dp[i][j], ov[j], vv[i]);
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < TM; i++) {
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                uint c = tx + j * CG;
                uint tq = q0 + c;
                float pr = tq < p.T && tk[i] <= tq ? exp(s[i][j] * p.scale - sL[c]) : 0.0;
                sP[c * PSTR + ty + i * RG] = pr;
                sDS[c * PSTR + ty + i * RG] = pr * (dp[i][j] - sD[c]);
            }
        }
        barrier();
        for (uint c = 0u; c < BC; c++) {
            float pr[TM];
            float ds[TM];
            vec4 ov[DN4];
            vec4 qv[DN4];
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                pr[i] = sP[c * PSTR + ty + i * RG];
                ds[i] = sDS[c * PSTR + ty + i * RG];
            }
            [[unroll]] for (uint k = 0u; k < DN4; k++) {
                ov[k] = sO[c * QSTR + tx + k * CG];
                qv[k] = sQ[c * QSTR + tx + k * CG];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                [[unroll]] for (uint k = 0u; k < DN4; k++) {
                    dv[i][k] += pr[i] * ov[k];
                    dk[i][k] += ds[i] * qv[k];
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        bool live = first + ty + i * RG < p.T;
        uint g = p.off_dqkv + b * p.T * C3 + tk[i] * C3 + h * hs;
        [[unroll]] for (uint k = 0u; k < DN4; k++) {
            uint d = 4u * (tx + k * CG);
            vec4 gk = dk[i][k] * p.scale;
            vec4 gv = dv[i][k];
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                if (live && d + e < hs) {
                    dqkv[g + p.C + d + e] += gk[e];
                    dqkv[g + 2u * p.C + d + e] += gv[e];
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
    uint nkb = (p.T + BR - 1u) / BR;
    uint h = gl_WorkGroupID.y;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        for (uint which = 0u; which < 2u; which++) {
            bool ok;
            uint kb = blockOf(gl_WorkGroupID.x, nkb, which, ok);
            if (ok) {
                keyBlock(b, h, kb, tx, ty);
            }
        }
    }
}
