// gelu_backward: dinp += gelu'(x) * dout (llm.c's gelu_backward, sech² as 1/cosh²), with
// tanh and cosh built from exp as in gelu_forward. ELEM is float or vec4; n and the offsets
// count ELEMs. The vec4 variant takes each component through the same geluGrad and multiplies
// and adds per component, so both variants give the same bits; it issues a quarter of the
// loads and stores.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Dinp { ELEM dinp[]; };
layout(set = 0, binding = 1) readonly buffer Inp { ELEM inp[]; };
layout(set = 0, binding = 2) readonly buffer Dout { ELEM dout[]; };
layout(push_constant) uniform Params {
    uint n;
    uint off_dinp;
    uint off_inp;
    uint off_dout;
    float scaling;
} p;

#include "gelu.glsl"

float geluGrad(float x) {
    float cube = 0.044715 * x * x * x;
    float u = p.scaling * (x + cube);
    float a = abs(u);
    float e = exp(min(a, 88.0));
    float t = tanhFrom(u, a, e);
    // Past |u| = 44 cosh² overflows and sech² rounds to 0, as in float32 on the CPU.
    float ch = 0.5 * (e + 1.0 / e);
    float sech = a > 44.0 ? 0.0 : 1.0 / (ch * ch);
    return 0.5 * (1.0 + t) + x * 0.5 * sech * p.scaling * (1.0 + 3.0 * 0.044715 * x * x);
}

#ifdef VEC4
vec4 grads(vec4 x) {
    return vec4(geluGrad(x.x), geluGrad(x.y), geluGrad(x.z), geluGrad(x.w));
}
#else
float grads(float x) {
    return geluGrad(x);
}
#endif

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        dinp[p.off_dinp + i] += grads(inp[p.off_inp + i]) * dout[p.off_dout + i];
    }
}
