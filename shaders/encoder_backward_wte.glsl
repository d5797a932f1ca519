// encoder_backward_wte: dwte[tokens[r], :] += dout[r, :] without float atomics. Workgroup
// (x, r) owns the ELEM columns x*W..x*W+W-1 of position r's token if r is the token's first
// occurrence in this dispatch, and then adds the dout rows of every occurrence in position
// order: the order of the CPU backend's loop, so the sums are the same bits. Tokens are
// staged through shared memory a tile at a time. As in encoder_forward, wte is bound a window
// of vn rows from row v0 and other tokens are skipped. ELEM is float or vec4; C and the
// offsets of dwte and dout count ELEMs. vec4 arithmetic is per component, so both variants
// give the same bits; the vec4 one has a quarter of the workgroups, each scanning the tokens
// once for four columns.
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

shared int tile[gl_WorkGroupSize.x];
shared uint seen;

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    uint c = gl_WorkGroupID.x * W + l;
    for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
        int tok = tokens[p.off_tok + r];
        uint v = uint(tok) - p.v0;
        if (v >= p.vn) {
            continue; // the same for every lane
        }
        if (l == 0) {
            seen = 0;
        }
        barrier();
        for (uint r2 = l; r2 < r; r2 += W) {
            if (tokens[p.off_tok + r2] == tok) {
                atomicOr(seen, 1);
            }
        }
        barrier();
        bool first = seen == 0;
        barrier(); // every lane has read seen before the next position resets it
        if (!first) {
            continue;
        }
        ELEM acc = c < p.C ? dwte[p.off_dwte + v * p.C + c] : ELEM(0.0);
        for (uint r0 = r; r0 < p.rows; r0 += W) {
            tile[l] = r0 + l < p.rows ? tokens[p.off_tok + r0 + l] : -1;
            barrier();
            uint m = min(W, p.rows - r0);
            if (c < p.C) {
                for (uint j = 0; j < m; j++) {
                    if (tile[j] == tok) {
                        acc += dout[p.off_dout + (r0 + j) * p.C + c];
                    }
                }
            }
            barrier();
        }
        if (c < p.C) {
            dwte[p.off_dwte + v * p.C + c] = acc;
        }
    }
}
