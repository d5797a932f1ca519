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

// blockOf is the index of the b-th block (b = 0 or 1) of workgroup pair x among n blocks:
// block x and block n-1-x share a workgroup, so that under the causal mask every workgroup
// does about the same work. ok is false when the pair has one block only.
uint blockOf(uint x, uint n, uint which, out bool ok) {
    uint blk = which == 0u ? x : n - 1u - x;
    ok = which == 0u || blk != x;
    return blk;
}
