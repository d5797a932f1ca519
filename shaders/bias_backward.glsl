// bias_backward: column sums of a row-major block, in a fixed order. Workgroup (x, r) of
// WX x WY invocations handles columns x*WX + tx and rows [r*rows_per, (r+1)*rows_per): lane ty
// adds rows ty, ty+WY, ... in order, then the WY lane sums are added in a fixed tree. The
// result goes to outv[off_out + r*ld_out + j], added to the value there when flags & 1.
// The host runs it once into per-block partials and once more over the partials (vk/matmul.go).
// ELEM is float or vec4; cols, the leading dimensions and the offsets count ELEMs. vec4
// arithmetic is per component, so both variants give the same bits; the vec4 one has a
// quarter of the workgroups and loads.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Out { ELEM outv[]; };
layout(set = 0, binding = 1) readonly buffer In { ELEM x[]; };
layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint ld_in;
    uint ld_out;
    uint rows_per;
    uint off_out;
    uint off_in;
    uint flags;
} p;

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;

shared ELEM part[WX * WY];

void main() {
    uint tx = gl_LocalInvocationID.x;
    uint ty = gl_LocalInvocationID.y;
    uint j = gl_WorkGroupID.x * WX + tx;
    uint r = gl_WorkGroupID.y;
    uint lo = r * p.rows_per;
    uint hi = min(p.rows, lo + p.rows_per);
    ELEM acc = ELEM(0.0);
    if (j < p.cols) {
        for (uint row = lo + ty; row < hi; row += WY) {
            acc += x[p.off_in + row * p.ld_in + j];
        }
    }
    part[ty * WX + tx] = acc;
    barrier();
    for (uint s = WY / 2; s > 0; s >>= 1) {
        if (ty < s) {
            part[ty * WX + tx] += part[(ty + s) * WX + tx];
        }
        barrier();
    }
    if (ty == 0 && j < p.cols) {
        uint o = p.off_out + r * p.ld_out + j;
        ELEM v = part[tx];
        if ((p.flags & 1u) != 0u) {
            v = outv[o] + v;
        }
        outv[o] = v;
    }
}
