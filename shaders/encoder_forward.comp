#version 450
// encoder_forward: out[r, :] = wte[tokens[r], :] + wpe[r % T, :], one workgroup per position.
// wte is bound a window of vn vocabulary rows starting at row v0 (the token embedding can
// exceed one storage-buffer window); positions whose token lies outside it are left to the
// dispatch whose window holds it.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(set = 0, binding = 2) readonly buffer Wte { float wte[]; };
layout(set = 0, binding = 3) readonly buffer Wpe { float wpe[]; };
layout(push_constant) uniform Params {
    uint rows; // positions in this dispatch, whole sequences of T
    uint T;
    uint C;
    uint v0;
    uint vn;
    uint off_out;
    uint off_tok;
    uint off_wte;
    uint off_wpe;
} p;

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        // Unsigned: a negative token wraps around and fails the range test too.
        uint v = uint(tokens[p.off_tok + r]) - p.v0;
        if (v >= p.vn) {
            continue;
        }
        uint t = r % p.T;
        for (uint c = l; c < p.C; c += W) {
            outv[p.off_out + r * p.C + c] = wte[p.off_wte + v * p.C + c] + wpe[p.off_wpe + t * p.C + c];
        }
    }
}
