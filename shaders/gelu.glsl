// gelu.glsl: GELU with the tanh approximation, 0.5 x (1 + tanh(u)) with u = scaling (x + 0.044715 x³)
// in llm.c's order of operations, shared by gelu_forward and the matmul epilogues so that both
// give the same bits. tanh is built from exp as the CPU backend does (a series near 0, 1 past
// 20), because GLSL's tanh has no precision guarantee. scaling is llm.c's sqrtf(2.0f / M_PI),
// passed by the host.

// tanhFrom is tanh(u) given a = |u| and e = exp(a), which only matters for a in [0.0625, 20).
float tanhFrom(float u, float a, float e) {
    float t;
    if (a < 0.0625) {
        float y2 = a * a;
        t = a * (1.0 + y2 * (-1.0 / 3.0 + y2 * (2.0 / 15.0 + y2 * (-17.0 / 315.0))));
    } else if (a >= 20.0) {
        t = 1.0;
    } else {
        t = 1.0 - 2.0 / (e * e + 1.0);
    }
    return u < 0.0 ? -t : t;
}

float tanhExp(float u) {
    float a = abs(u);
    return tanhFrom(u, a, exp(min(a, 88.0)));
}

float gelu(float x, float scaling) {
    float cube = 0.044715 * x * x * x;
    float u = scaling * (x + cube);
    return 0.5 * x * (1.0 + tanhExp(u));
}
