// encoder_backward_wte: dwte[tokens[r], :] += dout[r, :] without float atomics. Workgroup
// (x, r) owns the ELEM columns x*W..x*W+W-1 of position r's token if r is the token's first
// occurrence in this dispatch, and then adds the dout rows of every occurrence in position
// order: the order of the CPU backend's loop, so the sums are the same bits. Every lane scans
// the tokens itself, so no lane waits at a barrier for another. As in encoder_forward, wte is
// bound a window of vn rows from row v0 and other tokens are skipped. ELEM is float or vec4;
// C and the offsets of dwte and dout count ELEMs. vec4 arithmetic is per component, so both
// variants give the same bits; the vec4 one has a quarter of the workgroups, each scanning the
// tokens once for four columns.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dwte { ELEM dwte[]; };
layout(set = 0, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(set = 0, binding = 2) readonly buffer Dout { ELEM dout[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint C;
    uint v0;
    uint vn;
    uint off_dwte;
    uint off_tok;
    uint off_dout;
} p;

void main() {
    uint c = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (c >= p.C) {
        return;
    }
    for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
        int tok = tokens[p.off_tok + r];
        uint v = uint(tok) - p.v0;
        if (v >= p.vn) {
            continue;
        }
        // One scan of every position: an earlier occurrence owns the row, later ones add.
        ELEM acc = dwte[p.off_dwte + v * p.C + c];
        bool first = true;
        for (uint j = 0; j < p.rows; j++) {
            if (tokens[p.off_tok + j] != tok) {
                continue;
            }
            if (j < r) {
                first = false;
                break;
            }
            acc += dout[p.off_dout + j * p.C + c];
        }
        if (first) {
            dwte[p.off_dwte + v * p.C + c] = acc;
        }
    }
}
