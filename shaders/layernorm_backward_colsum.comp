#version 450
// layernorm_backward_colsum: dweight[c] += sum of the blocks' partials, dbias likewise, adding
// blocks in order (see layernorm_backward_partial).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dweight { float dw[]; };
layout(set = 0, binding = 1) buffer Dbias { float db[]; };
layout(set = 0, binding = 2) readonly buffer Part { float part[]; };
layout(push_constant) uniform Params {
    uint blocks;
    uint C;
    uint off_dw;
    uint off_db;
    uint off_part;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint c = gl_GlobalInvocationID.x; c < p.C; c += stride) {
        float sw = 0.0;
        float sb = 0.0;
        for (uint blk = 0; blk < p.blocks; blk++) {
            sw += part[p.off_part + blk * 2 * p.C + c];
            sb += part[p.off_part + blk * 2 * p.C + p.C + c];
        }
        dw[p.off_dw + c] += sw;
        db[p.off_db + c] += sb;
    }
}
