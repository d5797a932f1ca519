#version 450
// crossentropy_backward: dlogits[row, v] += (probs[row, v] - [v == target]) * dlosses[row] for
// v < V, one workgroup per row; padded columns are untouched.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dlogits { float dlogits[]; };
layout(set = 0, binding = 1) readonly buffer Probs { float probs[]; };
layout(set = 0, binding = 2) readonly buffer Targets { int targets[]; };
layout(set = 0, binding = 3) readonly buffer Dlosses { float dlosses[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint V;
    uint Vp;
    uint off_d;
    uint off_probs;
    uint off_tg;
    uint off_dl;
} p;

void main() {
    uint l = gl_LocalInvocationID.x;
    uint W = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        float dl = dlosses[p.off_dl + row];
        uint ix = uint(targets[p.off_tg + row]);
        for (uint v = l; v < p.V; v += W) {
            float g = probs[p.off_probs + row * p.Vp + v];
            if (v == ix) {
                g -= 1.0;
            }
            dlogits[p.off_d + row * p.Vp + v] += g * dl;
        }
    }
}
