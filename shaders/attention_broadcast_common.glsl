// Shared by the broadcast attention kernels: attention for a CPU implementation of Vulkan,
// where every load whose address differs between invocations is a loop over the SIMD lanes and
// barriers are dear (see matmul_broadcast.comp). A workgroup is one subgroup of consecutive
// rows (queries or keys) of one (batch, head), one row per invocation, kept in private arrays
// of HS floats. The other side's rows come in tiles of SG, one row a lane: each lane loads an
// element of its row and shuffles pass it to every lane, one load for SG rows where reading
// each row at an address the same for every lane cost a load per row (the three passes were
// 3-4x slower on lavapipe). No shared memory, no barriers. HS, the head size, is a
// specialization constant, so the loops over it have fixed trip counts.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;
layout(constant_id = 4) const uint SG = 8; // the subgroup size, which is the workgroup's

#define NEG_INF uintBitsToFloat(0xff800000u)
