#version 450
// copy: dst[off_dst + i] = src[off_src + i] for i < n, bit for bit (float32 or int32).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { uint src[]; };
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
