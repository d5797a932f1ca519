#version 450
// gelu_forward: out = 0.5 x (1 + tanh(u)), u = GELU_SCALING_FACTOR (x + 0.044715 x³), in llm.c's
// order of operations. tanh is built from exp as the CPU backend does (a series near 0, 1 past
// 20), because GLSL's tanh has no precision guarantee.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(set = 0, binding = 1) readonly buffer Inp { float inp[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_out;
    uint off_inp;
    float scaling; // llm.c's sqrtf(2.0f / M_PI), from the host
} p;

float tanhExp(float u) {
    float a = abs(u);
    float t;
    if (a < 0.0625) {
        float y2 = a * a;
        t = a * (1.0 + y2 * (-1.0 / 3.0 + y2 * (2.0 / 15.0 + y2 * (-17.0 / 315.0))));
    } else if (a >= 20.0) {
        t = 1.0;
    } else {
        float e = exp(a);
        t = 1.0 - 2.0 / (e * e + 1.0);
    }
    return u < 0.0 ? -t : t;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float x = inp[p.off_inp + i];
        float cube = 0.044715 * x * x * x;
        float u = p.scaling * (x + cube);
        outv[p.off_out + i] = 0.5 * x * (1.0 + tanhExp(u));
    }
}
