// Pairing of row blocks, shared by the flash-attention kernels.

// blockOf is the index of the b-th block (b = 0 or 1) of workgroup pair x among n blocks:
// block x and block n-1-x share a workgroup, so that under the causal mask every workgroup
// does about the same work. ok is false when the pair has one block only.
uint blockOf(uint x, uint n, uint which, out bool ok) {
    uint blk = which == 0u ? x : n - 1u - x;
    ok = which == 0u || blk != x;
    return blk;
}
