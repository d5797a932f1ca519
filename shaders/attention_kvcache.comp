#version 450
// attention_kvcache: writes the keys and values of Tq new positions pos..pos+Tq-1 from qkv
// (B,Tq,3C) into the caches (B,maxT,C each).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Kc { float kc[]; };
layout(set = 0, binding = 1) writeonly buffer Vc { float vc[]; };
layout(set = 0, binding = 2) readonly buffer Qkv { float qkv[]; };
layout(push_constant) uniform Params {
    uint n; // B*Tq*C
    uint Tq;
    uint C;
    uint maxT;
    uint pos;
    uint off_kc;
    uint off_vc;
    uint off_qkv;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < p.n; idx += stride) {
        uint bt = idx / p.C;
        uint c = idx - bt * p.C;
        uint b = bt / p.Tq;
        uint t = bt - b * p.Tq;
        uint src = p.off_qkv + bt * 3 * p.C + p.C + c;
        uint dst = (b * p.maxT + p.pos + t) * p.C + c;
        kc[p.off_kc + dst] = qkv[src];
        vc[p.off_vc + dst] = qkv[src + p.C];
    }
}
