#version 450
// embedding_forward: out[r, :] = wte[tokens[r], :], one workgroup per row. wte is bound a
// window of vn vocabulary rows from row v0; rows whose token lies outside it are left to the
// dispatch whose window holds it.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(set = 0, binding = 2) readonly buffer Wte { float wte[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint v0;
    uint vn;
    uint off_out;
    uint off_tok;
    uint off_wte;
} p;

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint v = uint(tokens[p.off_tok + r]) - p.v0;
        if (v >= p.vn) {
            continue;
        }
        for (uint c = l; c < p.C; c += W) {
            outv[p.off_out + r * p.C + c] = wte[p.off_wte + v * p.C + c];
        }
    }
}
