#version 450
// axpy: y[off_y + i] += alpha * x[off_x + i] for i < n.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Y { float y[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_y;
    uint off_x;
    float alpha;
} p;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        // Written as one product and one sum, matching the host's y += alpha*x.
        precise float t = p.alpha * x[p.off_x + i];
        y[p.off_y + i] = y[p.off_y + i] + t;
    }
}
