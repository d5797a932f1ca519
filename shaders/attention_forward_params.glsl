// Bindings and parameters of the attention forward kernels (flash and broadcast).
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) writeonly buffer Lse { float lse[]; };
layout(set = 0, binding = 2) readonly buffer Q { float q[]; };
layout(set = 0, binding = 3) readonly buffer K { float k[]; };
layout(set = 0, binding = 4) readonly buffer V { float v[]; };
layout(push_constant) uniform Params {
    uint Tq;       // queries per sequence
    uint NH;
    uint hs;
    uint qstride;  // elements from one query to the next (3C)
    uint kvstride; // from one key (value) to the next
    uint kvbatch;  // from one batch's keys to the next
    uint ostride;  // from one output row to the next (C)
    uint pos;      // position of the first query
    uint B;        // sequences in this dispatch
    uint off_out;
    uint off_lse;  // lse[(b*NH + h)*Tq + t] = m + log(l), the backward's saved state
    uint off_q;
    uint off_k;
    uint off_v;
    float scale;
    uint write_lse;
} p;
