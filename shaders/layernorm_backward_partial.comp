#version 450
// layernorm_backward_partial: the first pass of dweight and dbias. Rows are split into blocks
// of rb consecutive rows; invocation (block, c) sums norm * dout and dout over its block's rows
// in order into part[block*2C + c] and part[block*2C + C + c]. layernorm_backward_colsum then
// adds the blocks in order: a fixed order, so the column sums are repeatable.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Part { float part[]; };
layout(set = 0, binding = 1) readonly buffer Dout { float dout[]; };
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
layout(set = 0, binding = 3) readonly buffer Mean { float meanv[]; };
layout(set = 0, binding = 4) readonly buffer Rstd { float rstdv[]; };
layout(push_constant) uniform Params {
    uint rows;   // rows in this dispatch
    uint blocks; // ceil(rows / rb)
    uint rb;
    uint C;
    uint off_part;
    uint off_dout;
    uint off_inp;
    uint off_mean;
    uint off_rstd;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint n = p.blocks * p.C;
    for (uint idx = gl_GlobalInvocationID.x; idx < n; idx += stride) {
        uint blk = idx / p.C;
        uint c = idx - blk * p.C;
        uint r1 = min(blk * p.rb + p.rb, p.rows);
        float dw = 0.0;
        float db = 0.0;
        for (uint r = blk * p.rb; r < r1; r++) {
            float d = dout[p.off_dout + r * p.C + c];
            float norm = (inp[p.off_inp + r * p.C + c] - meanv[p.off_mean + r]) * rstdv[p.off_rstd + r];
            db += d;
            dw += norm * d;
        }
        part[p.off_part + blk * 2 * p.C + c] = dw;
        part[p.off_part + blk * 2 * p.C + p.C + c] = db;
    }
}
