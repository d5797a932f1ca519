#version 450
// copy_vec4: copy.comp over uvec4s, for views that start on one and hold a multiple of four
// elements; n and the offsets count uvec4s.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Dst { uvec4 dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_dst;
    uint off_src;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        dst[p.off_dst + i] = src[p.off_src + i];
    }
}
