// adamw: llm.c's AdamW update of n parameters, in the same order of operations as the CPU
// backend (tensor/cpu adamScalar). With flags & 1 the gradient is first scaled by
// min(1, max_norm/(sqrt(sumsq[off_s]) + 1e-6)), read here so that the host never waits for
// the gradient norm. c1 and c2 are the bias corrections 1 - beta^step, computed by the host.
// ELEM is float or vec4; n and the offsets count ELEMs (off_s counts floats). vec4 arithmetic
// is per component, so both variants give the same bits; the vec4 one issues a quarter of the
// loads and stores. Every result is precise: NVIDIA's compiler otherwise fuses multiplies and
// adds into FMAs differently in the two variants (one bit apart in a test on an H200).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer P { ELEM param[]; };
layout(set = 0, binding = 1) readonly buffer G { ELEM grad[]; };
layout(set = 0, binding = 2) buffer M { ELEM mom[]; };
layout(set = 0, binding = 3) buffer V { ELEM vel[]; };
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
        ELEM w = param[p.off_p + i];
        precise ELEM g = grad[p.off_g + i] * gs;
        precise ELEM m = p.b1 * mom[p.off_m + i] + p.omb1 * g;
        precise ELEM v = p.b2 * vel[p.off_v + i] + p.omb2 * g * g;
        precise ELEM mhat = m / p.c1;
        precise ELEM vhat = v / p.c2;
        mom[p.off_m + i] = m;
        vel[p.off_v + i] = v;
        precise ELEM next = w - p.lr * (mhat / (sqrt(vhat) + p.eps) + p.wd * w);
        param[p.off_p + i] = next;
    }
}
