// peak_coopmat: a probe of the device's cooperative-matrix rate (float16 operands, float32
// sums), through VK_NV_cooperative_matrix or, where KHR is defined, VK_KHR_cooperative_matrix.
// Each subgroup runs `iters` rounds of 8 independent LM x LN x LK products on registers
// and stores them, so the time is the matrix units' alone: 16 * LM*LN*LK * iters flops
// per subgroup. Its shape is the matmul kernel's (vk/matmul_coopmat.go).
#include "coopmat_types.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint LM = 16;
layout(constant_id = 4) const uint LN = 16;
layout(constant_id = 5) const uint LK = 16;
layout(set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Params {
    uint iters;
    uint off_out;
    float seed;
} p;

void main() {
    CM_A(LM, LK) a = CM_A(LM, LK)(float16_t(p.seed));
    CM_B(LK, LN) b = CM_B(LK, LN)(float16_t(p.seed));
    CM_ACC(LM, LN) acc[8];
    [[unroll]] for (uint j = 0; j < 8; j++) {
        acc[j] = CM_ACC(LM, LN)(float(j));
    }
    for (uint i = 0; i < p.iters; i++) {
        [[unroll]] for (uint j = 0; j < 8; j++) {
            acc[j] = CM_MULADD(a, b, acc[j]);
        }
    }
    // Stored one by one: glslang 11's optimiser crashes on a sum of cooperative matrices.
    uint base = p.off_out + (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * 8 * LM * LN;
    [[unroll]] for (uint j = 0; j < 8; j++) {
        CM_STORE(acc[j], outv, base + j * LM * LN, LN, CM_ROW_MAJOR);
    }
}
