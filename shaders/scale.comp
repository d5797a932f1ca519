#version 450
// scale: x[off + i] *= s for i < n.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off;
    float s;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        x[p.off + i] = x[p.off + i] * p.s;
    }
}
