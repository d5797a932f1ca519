#version 450
// sum: one pass of a deterministic two-pass reduction. Workgroup g adds x over the
// elements i = g*W + l + k*G*W (l its lane, G the number of workgroups, W the workgroup size, a
// power of two), reduces the lanes in a fixed tree, and writes out[off_out + g]. The host runs
// it with G workgroups into partials, then sum with one workgroup over the G partials. The
// order of additions depends only on n, G and W, so results are bitwise repeatable.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_x;
} p;

shared float partial[gl_WorkGroupSize.x];

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    float acc = 0.0;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float v = x[p.off_x + i];
        acc += v;
    }
    partial[lane] = acc;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (lane < s) {
            partial[lane] += partial[lane + s];
        }
        barrier();
    }
    if (lane == 0) {
        outv[p.off_out + gl_WorkGroupID.x] = partial[0];
    }
}
