#version 450
// fill_vec4: fill.comp over uvec4s, for views that start on one and hold a multiple of four
// elements; n and off count uvec4s.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer X { uvec4 x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off;
    uint bits;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        x[p.off + i] = uvec4(p.bits);
    }
}
