#version 450
// fill: x[off + i] = value for i < n. The value travels as raw bits so one shader fills
// float32 and int32 tensors alike.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer X { uint x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off;
    uint bits;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        x[p.off + i] = p.bits;
    }
}
