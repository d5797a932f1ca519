// sum (and, with SQUARES defined, sumsquares): one pass of a deterministic two-pass reduction.
// Lane l of workgroup g adds the vec4s q = g*W + l + k*G*W of x (or their squares) component
// by component (G the number of workgroups, W the workgroup size, a power of two), adds the
// four components pairwise, reduces the lanes with groupSum (see reduce.glsl), and writes
// out[off_out + g]. The host runs it with G workgroups into partials, then sum with one
// workgroup over the G partials. The order of additions depends only on n, G, W and the
// subgroup size, so results are bitwise repeatable. With VEC4 defined x is read as vec4s
// (n and off_x count vec4s); otherwise as floats, padded with zeros to a whole vec4 (n and
// off_x count floats). Both give the same bits for the same input, the vec4 one with a
// quarter of the loads.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
#ifdef VEC4
layout(set = 0, binding = 1) readonly buffer X { vec4 x[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
#endif
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_x;
} p;

#include "reduce.glsl"

#ifdef VEC4

vec4 quad(uint q) {
    return x[p.off_x + q];
}
#else
float at(uint i) {
    return i < p.n ? x[p.off_x + i] : 0.0;
}

vec4 quad(uint q) {
    uint i = 4 * q;
    return vec4(at(i), at(i + 1), at(i + 2), at(i + 3));
}
#endif

void main() {
#ifdef VEC4
    uint nq = p.n;
#else
    uint nq = (p.n + 3) / 4;
#endif
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    vec4 acc = vec4(0.0);
    for (uint q = gl_GlobalInvocationID.x; q < nq; q += stride) {
        vec4 v = quad(q);
#ifdef SQUARES
        acc += v * v;
#else
        acc += v;
#endif
    }
    float total = groupSum((acc.x + acc.y) + (acc.z + acc.w));
    if (gl_LocalInvocationID.x == 0) {
        outv[p.off_out + gl_WorkGroupID.x] = total;
    }
}
