// matmul_gelu.glsl: the matmul kernels' GELU epilogue, llm.c's fused bias+GELU of the MLP's
// first product. With flags & 64, an output stored at element e of outv also goes through
// gelu.glsl to geluv[e - off_out + off_gelu], so the pre-activation and its GELU are written in
// one pass. Included after the push block, which holds flags, off_out, off_gelu and scaling.
#include "gelu.glsl"

layout(set = 0, binding = 4) writeonly buffer GeluOut { float geluv[]; };
layout(set = 0, binding = 4) writeonly buffer GeluOut4 { vec4 geluv4[]; };

void storeGelu(uint e, float r) {
    if ((p.flags & 64u) != 0u) {
        geluv[e - p.off_out + p.off_gelu] = gelu(r, p.scaling);
    }
}

// storeGelu4 stores 4 consecutive outputs from element e; e and off_gelu are multiples of 4.
void storeGelu4(uint e, vec4 r) {
    if ((p.flags & 64u) != 0u) {
        vec4 g = vec4(gelu(r.x, p.scaling), gelu(r.y, p.scaling), gelu(r.z, p.scaling), gelu(r.w, p.scaling));
        geluv4[(e - p.off_out + p.off_gelu) >> 2] = g;
    }
}
