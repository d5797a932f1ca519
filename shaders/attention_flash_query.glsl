// Flash-attention backward, query pass: a workgroup owns BR queries of one (batch, head) and
// streams the keys at or below their diagonal in tiles of BC, accumulating
// dq = scale * sum_k p (dp - dsum) k with dp = dout·v, then adds it to dqkv. No T×T matrix and
// no atomics: each dq is summed by one invocation in key order.
shared float sQ[BR * STR];
shared float sO[BR * STR]; // dout
shared float sK[BC * STR];
shared float sV[BC * STR];
shared float sDS[BR * PSTR];
shared float sRed[WG];

void queryBlock(uint b, uint h, uint qb) {
    uint tid = gl_LocalInvocationID.x;
    uint r = tid / LANES;
    uint lane = tid % LANES;
    uint hs = p.hs;
    uint C3 = 3u * p.C;
    uint first = qb * BR;
    uint qbase = p.off_qkv + b * p.T * C3 + h * hs;
    uint dbase = p.off_dout + b * p.T * p.C + h * hs;
    uint obase = p.off_out + b * p.T * p.C + h * hs;
    uint row = (b * p.NH + h) * p.T;

    LOAD_ROWS(sQ, BR, qkv, qbase, C3, first, false)
    LOAD_ROWS(sO, BR, dout, dbase, p.C, first, false)
    uint tq = min(first + r, p.T - 1u);
    float part = 0.0;
    for (uint i = 0u; i < DPL; i++) {
        uint d = lane + i * LANES;
        if (d < hs) {
            part += dout[dbase + tq * p.C + d] * outv[obase + tq * p.C + d];
        }
    }
    sRed[tid] = part;
    barrier();
    float D = 0.0;
    for (uint j = 0u; j < LANES; j++) {
        D += sRed[r * LANES + j];
    }
    if (lane == 0u && first + r < p.T) {
        dsum[p.off_dsum + row + tq] = D;
    }
    float L = lse[p.off_lse + row + tq];

    uint nkeys = min(first + BR, p.T);
    uint ntiles = (nkeys + BC - 1u) / BC;
    float dq[DPL];
    for (uint i = 0u; i < DPL; i++) {
        dq[i] = 0.0;
    }
    for (uint kt = 0u; kt < ntiles; kt++) {
        uint k0 = kt * BC;
        barrier();
        LOAD_ROWS(sK, BC, qkv, qbase + p.C, C3, k0, true)
        LOAD_ROWS(sV, BC, qkv, qbase + 2u * p.C, C3, k0, true)
        barrier();
        for (uint j = 0u; j < BC / LANES; j++) {
            uint c = lane + j * LANES;
            float s = 0.0;
            float dp = 0.0;
            for (uint d = 0u; d < hs; d++) {
                s += sQ[r * STR + d] * sK[c * STR + d];
                dp += sO[r * STR + d] * sV[c * STR + d];
            }
            float pr = k0 + c <= tq ? exp(s * p.scale - L) : 0.0;
            sDS[r * PSTR + c] = pr * (dp - D);
        }
        barrier();
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                float a = dq[i];
                for (uint c = 0u; c < BC; c++) {
                    a += sDS[r * PSTR + c] * sK[c * STR + d];
                }
                dq[i] = a;
            }
        }
    }
    if (first + r < p.T) {
        uint g = p.off_dqkv + b * p.T * C3 + tq * C3 + h * hs;
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                dqkv[g + d] += dq[i] * p.scale;
            }
        }
    }
    // Before the next block overwrites the tiles and sRed.
    barrier();
}

void main() {
    uint nqb = (p.T + BR - 1u) / BR;
    uint h = gl_WorkGroupID.y;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        for (uint which = 0u; which < 2u; which++) {
            bool ok;
            uint qb = blockOf(gl_WorkGroupID.x, nqb, which, ok);
            if (ok) {
                queryBlock(b, h, qb);
            }
        }
    }
}
