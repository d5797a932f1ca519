// Shared by the broadcast attention kernels: attention for a CPU implementation of Vulkan,
// where every load whose address differs between invocations is a loop over the SIMD lanes and
// barriers are dear (see matmul_broadcast.comp). A workgroup is one SIMD row of consecutive
// rows (queries or keys) of one (batch, head), one row per invocation, kept in private arrays
// of HS floats; the other side's rows are read at addresses the same for every invocation,
// which the driver loads once for all lanes. No shared memory, no barriers. HS, the head size,
// is a specialization constant, so the loops over it unroll and the arrays stay in registers.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;

#define NEG_INF uintBitsToFloat(0xff800000u)
