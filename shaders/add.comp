#version 450
// add: out[off_out + i] = a[off_a + i] + b[off_b + i] for i < n. out may alias a or b: each
// invocation reads its element before writing it.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_a;
    uint off_b;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        outv[p.off_out + i] = a[p.off_a + i] + b[p.off_b + i];
    }
}
