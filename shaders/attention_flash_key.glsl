// Flash-attention backward, key pass: a workgroup owns BR keys of one (batch, head) and
// streams the queries at or below the diagonal in tiles of BC, accumulating
// dv = sum_q p dout and dk = scale * sum_q p (dp - dsum) q, then adds them to dqkv. Each
// value is summed by one invocation in query order: no atomics.
shared float sK[BR * STR];
shared float sV[BR * STR];
shared float sQ[BC * STR];
shared float sO[BC * STR]; // dout
shared float sP[BR * PSTR];
shared float sDS[BR * PSTR];
shared float sL[BC];
shared float sD[BC];

void keyBlock(uint b, uint h, uint kb) {
    uint tid = gl_LocalInvocationID.x;
    uint r = tid / LANES;
    uint lane = tid % LANES;
    uint hs = p.hs;
    uint C3 = 3u * p.C;
    uint first = kb * BR;
    uint qbase = p.off_qkv + b * p.T * C3 + h * hs;
    uint dbase = p.off_dout + b * p.T * p.C + h * hs;
    uint row = (b * p.NH + h) * p.T;

    LOAD_ROWS(sK, BR, qkv, qbase + p.C, C3, first, false)
    LOAD_ROWS(sV, BR, qkv, qbase + 2u * p.C, C3, first, false)
    uint tk = min(first + r, p.T - 1u);
    float dk[DPL];
    float dv[DPL];
    for (uint i = 0u; i < DPL; i++) {
        dk[i] = 0.0;
        dv[i] = 0.0;
    }
    uint nqt = (p.T + BC - 1u) / BC;
    for (uint qt = first / BC; qt < nqt; qt++) {
        uint q0 = qt * BC;
        barrier();
        LOAD_ROWS(sQ, BC, qkv, qbase, C3, q0, true)
        LOAD_ROWS(sO, BC, dout, dbase, p.C, q0, true)
        if (tid < BC) {
            bool inside = q0 + tid < p.T;
            sL[tid] = inside ? lse[p.off_lse + row + q0 + tid] : 0.0;
            sD[tid] = inside ? dsum[p.off_dsum + row + q0 + tid] : 0.0;
        }
        barrier();
        for (uint j = 0u; j < BC / LANES; j++) {
            uint c = lane + j * LANES;
            uint tq = q0 + c;
            float s = 0.0;
            float dp = 0.0;
            for (uint d = 0u; d < hs; d++) {
                s += sQ[c * STR + d] * sK[r * STR + d];
                dp += sO[c * STR + d] * sV[r * STR + d];
            }
            float pr = tq < p.T && tk <= tq ? exp(s * p.scale - sL[c]) : 0.0;
            sP[r * PSTR + c] = pr;
            sDS[r * PSTR + c] = pr * (dp - sD[c]);
        }
        barrier();
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                float a = dv[i];
                float g = dk[i];
                for (uint c = 0u; c < BC; c++) {
                    a += sP[r * PSTR + c] * sO[c * STR + d];
                    g += sDS[r * PSTR + c] * sQ[c * STR + d];
                }
                dv[i] = a;
                dk[i] = g;
            }
        }
    }
    if (first + r < p.T) {
        uint g = p.off_dqkv + b * p.T * C3 + tk * C3 + h * hs;
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                dqkv[g + p.C + d] += dk[i] * p.scale;
                dqkv[g + 2u * p.C + d] += dv[i];
            }
        }
    }
    // Before the next block overwrites the tiles.
    barrier();
}

void main() {
    uint nkb = (p.T + BR - 1u) / BR;
    uint h = gl_WorkGroupID.y;
    for (uint b = gl_WorkGroupID.z; b < p.B; b += gl_NumWorkGroups.z) {
        for (uint which = 0u; which < 2u; which++) {
            bool ok;
            uint kb = blockOf(gl_WorkGroupID.x, nkb, which, ok);
            if (ok) {
                keyBlock(b, h, kb);
            }
        }
    }
}
