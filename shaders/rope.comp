#version 450
// rope: rotary position embeddings, rotate-half layout. One invocation per (row, head, pair
// i < D/2). Heads below rotHeads are rotated at position pos0 + row % T (forward) or rotated
// back with the gradient accumulated (backward); the others are copied (forward) or their
// gradient accumulated unchanged (backward). table holds per position D/2 cosines then D/2 sines.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dst { float dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { float src[]; };
layout(set = 0, binding = 2) readonly buffer Table { float tab[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint T;
    uint pos0;
    uint H;
    uint rotHeads;
    uint D;
    uint backward;
    uint off_dst;
    uint off_src;
    uint off_tab;
} p;

void main() {
    uint half_ = p.D / 2;
    uint perRow = p.H * half_;
    uint n = p.rows * perRow;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint g = gl_GlobalInvocationID.x; g < n; g += stride) {
        uint row = g / perRow;
        uint h = (g % perRow) / half_;
        uint i = g % half_;
        uint a = row * p.H * p.D + h * p.D + i;
        uint b = a + half_;
        float x0 = src[p.off_src + a];
        float x1 = src[p.off_src + b];
        if (h >= p.rotHeads) {
            if (p.backward != 0) {
                dst[p.off_dst + a] += x0;
                dst[p.off_dst + b] += x1;
            } else {
                dst[p.off_dst + a] = x0;
                dst[p.off_dst + b] = x1;
            }
            continue;
        }
        uint t = p.off_tab + (p.pos0 + row % p.T) * p.D;
        float c = tab[t + i];
        float s = tab[t + half_ + i];
        if (p.backward != 0) {
            dst[p.off_dst + a] += x0 * c + x1 * s;
            dst[p.off_dst + b] += x1 * c - x0 * s;
        } else {
            dst[p.off_dst + a] = x0 * c - x1 * s;
            dst[p.off_dst + b] = x1 * c + x0 * s;
        }
    }
}
