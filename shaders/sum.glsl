// sum (and, with SQUARES defined, sumsquares): one pass of a deterministic two-pass reduction.
// Workgroup g adds x (or x*x) over the elements i = g*W + l + k*G*W (l its lane, G the number
// of workgroups, W the workgroup size, a power of two), reduces the lanes with groupSum (see
// reduce.glsl), and writes out[off_out + g]. The host runs it with G workgroups into partials,
// then sum with one workgroup over the G partials. The order of additions depends only on n,
// G, W and the subgroup size, so results are bitwise repeatable.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_x;
} p;

#include "reduce.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    float acc = 0.0;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float v = x[p.off_x + i];
#ifdef SQUARES
        acc += v * v;
#else
        acc += v;
#endif
    }
    float total = groupSum(acc);
    if (gl_LocalInvocationID.x == 0) {
        outv[p.off_out + gl_WorkGroupID.x] = total;
    }
}
