#version 450
// adamw: llm.c's AdamW update of n parameters, in the same order of operations as the CPU
// backend (tensor/cpu adamScalar). With flags & 1 the gradient is first scaled by
// min(1, max_norm/(sqrt(sumsq[off_s]) + 1e-6)), read here so that the host never waits for
// the gradient norm. c1 and c2 are the bias corrections 1 - beta^step, computed by the host.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer P { float param[]; };
layout(set = 0, binding = 1) readonly buffer G { float grad[]; };
layout(set = 0, binding = 2) buffer M { float mom[]; };
layout(set = 0, binding = 3) buffer V { float vel[]; };
layout(set = 0, binding = 4) readonly buffer S { float sumsq[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_p;
    uint off_g;
    uint off_m;
    uint off_v;
    uint off_s;
    float lr;
    float b1;
    float omb1; // 1 - b1, rounded as the host rounds it
    float b2;
    float omb2;
    float eps;
    float wd;
    float c1;
    float c2;
    float max_norm;
    uint flags;
} p;

void main() {
    float gs = 1.0;
    if ((p.flags & 1u) != 0u) {
        float s = p.max_norm / (sqrt(sumsq[p.off_s]) + 1e-6);
        if (s < 1.0) {
            gs = s;
        }
    }
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float w = param[p.off_p + i];
        float g = grad[p.off_g + i] * gs;
        float m = p.b1 * mom[p.off_m + i] + p.omb1 * g;
        float v = p.b2 * vel[p.off_v + i] + p.omb2 * g * g;
        float mhat = m / p.c1;
        float vhat = v / p.c2;
        mom[p.off_m + i] = m;
        vel[p.off_v + i] = v;
        param[p.off_p + i] = w - p.lr * (mhat / (sqrt(vhat) + p.eps) + p.wd * w);
    }
}
