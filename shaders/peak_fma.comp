#version 450
#extension GL_EXT_control_flow_attributes : require
// peak_fma: a probe of the device's float32 multiply-add rate. Each invocation runs `iters`
// rounds of 16 independent fused multiply-adds on registers and writes one sum, so the time is
// arithmetic only: 32 * iters flops per invocation.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Params {
    uint iters;
    uint off_out;
    float seed;
} p;

void main() {
    float a[16];
    for (int j = 0; j < 16; j++) {
        a[j] = p.seed * float(j + gl_GlobalInvocationID.x);
    }
    const float m = 0.9999;
    const float c = 0.0001;
    for (uint i = 0; i < p.iters; i++) {
        [[unroll]] for (int j = 0; j < 16; j++) {
            a[j] = fma(a[j], m, c);
        }
    }
    float s = 0.0;
    for (int j = 0; j < 16; j++) {
        s += a[j];
    }
    uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    outv[p.off_out + g] = s;
}
