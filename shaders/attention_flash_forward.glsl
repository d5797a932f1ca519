// Flash-attention forward (FlashAttention-2's loop order): a workgroup owns a block of BR
// queries of one (batch, head) and streams the keys and values in tiles of BC through shared
// memory, keeping a running maximum m, sum l and unnormalised output per query (the online
// softmax), so no T×T matrix is written. Tiles entirely above the causal diagonal are skipped.
// Each query's result depends only on its own row and on key tiles starting at key 0, so a
// query decoded against the KV cache gets the bits of the full-sequence forward.
#include "attention_forward_params.glsl"

shared float sQ[BR * STR];
shared float sK[BC * STR];
shared float sV[BC * STR];
shared float sS[BR * PSTR]; // scores of the tile
shared float sE[BR * PSTR]; // their exponentials

void queryBlock(uint b, uint h, uint qb) {
    uint tid = gl_LocalInvocationID.x;
    uint r = tid / LANES;
    uint lane = tid % LANES;
    uint hs = p.hs;
    uint first = qb * BR;
    uint kbase = p.off_k + b * p.kvbatch + h * hs;
    uint vbase = p.off_v + b * p.kvbatch + h * hs;

    // Rows past the last query repeat it and are not written.
    for (uint i = tid; i < BR * hs; i += WG) {
        uint rr = i / hs;
        uint d = i - rr * hs;
        uint t = min(first + rr, p.Tq - 1u);
        sQ[rr * STR + d] = q[p.off_q + (b * p.Tq + t) * p.qstride + h * hs + d];
    }
    uint tq = min(first + r, p.Tq - 1u);
    uint qpos = p.pos + tq;
    uint nkeys = p.pos + min(first + BR, p.Tq); // keys seen by the block's last query
    uint ntiles = (nkeys + BC - 1u) / BC;

    float m = NEG_INF;
    float l = 0.0;
    float acc[DPL];
    for (uint i = 0u; i < DPL; i++) {
        acc[i] = 0.0;
    }
    for (uint kt = 0u; kt < ntiles; kt++) {
        uint k0 = kt * BC;
        // The previous tile's readers are done with sK, sV and sE.
        barrier();
        for (uint i = tid; i < BC * hs; i += WG) {
            uint c = i / hs;
            uint d = i - c * hs;
            uint key = k0 + c;
            bool inside = key < nkeys;
            sK[c * STR + d] = inside ? k[kbase + key * p.kvstride + d] : 0.0;
            sV[c * STR + d] = inside ? v[vbase + key * p.kvstride + d] : 0.0;
        }
        barrier();
        float s[BC / LANES];
        for (uint j = 0u; j < BC / LANES; j++) {
            uint c = lane + j * LANES;
            float dot = 0.0;
            for (uint d = 0u; d < hs; d++) {
                dot += sQ[r * STR + d] * sK[c * STR + d];
            }
            s[j] = k0 + c <= qpos ? dot * p.scale : NEG_INF;
            sS[r * PSTR + c] = s[j];
        }
        barrier();
        // Key 0 is in every row's first tile, so mnew is finite from there on.
        float mt = NEG_INF;
        for (uint c = 0u; c < BC; c++) {
            mt = max(mt, sS[r * PSTR + c]);
        }
        float mnew = max(m, mt);
        float alpha = exp(m - mnew);
        for (uint j = 0u; j < BC / LANES; j++) {
            sE[r * PSTR + lane + j * LANES] = exp(s[j] - mnew);
        }
        barrier();
        float rowsum = 0.0;
        for (uint c = 0u; c < BC; c++) {
            rowsum += sE[r * PSTR + c];
        }
        l = l * alpha + rowsum;
        m = mnew;
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                float a = acc[i] * alpha;
                for (uint c = 0u; c < BC; c++) {
                    a += sE[r * PSTR + c] * sV[c * STR + d];
                }
                acc[i] = a;
            }
        }
    }
    if (first + r < p.Tq) {
        float inv = 1.0 / l;
        uint o0 = p.off_out + (b * p.Tq + tq) * p.ostride + h * hs;
        for (uint i = 0u; i < DPL; i++) {
            uint d = lane + i * LANES;
            if (d < hs) {
                outv[o0 + d] = acc[i] * inv;
            }
        }
        if (p.write_lse != 0u && lane == 0u) {
            lse[p.off_lse + (b * p.NH + h) * p.Tq + tq] = m + log(l);
        }
    }
    // Before the next block overwrites sQ.
    barrier();
}

void main() {
    uint nqb = (p.Tq + BR - 1u) / BR;
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
