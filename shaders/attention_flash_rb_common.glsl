// Shared by the register-blocked flash-attention kernels (attention_flash_rb_*.glsl), which
// #define HSMAX (largest head size, a multiple of 4), BR (rows a workgroup owns), BC (rows
// of the tile it streams), TM (owned rows per invocation) and CG_LOG2 (log2 of CG, the
// invocations sharing an owned row) before including this. Invocation (tx, ty) owns rows
// ty + i*RG (i < TM); of each tile's scores it computes columns tx + j*CG (j < TN), and of
// each owned row's accumulators head dimension quads tx + k*CG (k < DN4). Rows one quad wide
// (vec4) are read from shared memory once for several multiply-adds, as in a register-tiled
// matrix product: a score block takes TM + TN quad loads for 4*TM*TN multiply-adds per head
// quad, an accumulator block TM scalar and DN4 quad loads for 4*TM*DN4 per streamed row.
// Loops over a block are unrolled ([[unroll]]), so that its arrays become registers.
#extension GL_EXT_control_flow_attributes : require
#include "attention_pairs.glsl"

#define CG (1u << CG_LOG2)
#define RG (BR / TM)       // row groups
#define WG (RG * CG)       // invocations
#define TN (BC / CG)       // score columns per invocation
#define H4 (HSMAX / 4u)    // head dimension quads
#define DN4 (H4 / CG)      // accumulator quads per invocation and row
#define QSTR (H4 + 1u)     // padded quad row: the rows an access reads start in different banks
// Padded row of a tile's scores (column-major, PSTR floats per streamed row): a warp's writes
// of one (i, j) hit distinct banks.
#define PSTR (BR + 32u / CG)

layout(local_size_x_id = 0) in;

#define NEG_INF uintBitsToFloat(0xff800000u)

// AT is element d of a head row starting at base, or 0 past the head or when !ok; QUAD is
// head quad d4 of it.
#define AT(buf, base, d, ok) ((ok) && (d) < p.hs ? buf[(base) + (d)] : 0.0)
#define QUAD(buf, base, d4, ok) \
    vec4(AT(buf, base, 4u * (d4), ok), AT(buf, base, 4u * (d4) + 1u, ok), AT(buf, base, 4u * (d4) + 2u, ok), AT(buf, base, 4u * (d4) + 3u, ok))
