// Shared by the flash-attention kernels, which #define HSMAX (largest head size), BR (rows of
// the block a workgroup owns) and BC (rows of the tile it streams) before including this.
// A workgroup is BR rows of LANES invocations: lane j of a row owns score columns j, j+LANES, ...
// of each tile and head dimensions j, j+LANES, ... of its accumulators.
#define LANES 8u
#define WG (BR * LANES)
// Shared rows are padded by one float so that lanes reading one column of different rows hit
// different banks.
#define STR (HSMAX + 1u)
#define PSTR (BC + 1u)
#define DPL (HSMAX / LANES)

layout(local_size_x_id = 0) in;

#define NEG_INF uintBitsToFloat(0xff800000u)

#include "attention_pairs.glsl"
