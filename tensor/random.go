package tensor

// Hash32 is the lowbias32 integer hash. It is the one source of randomness inside ops (dropout),
// written in 32-bit arithmetic so every backend, GPU shaders included, computes the same bits.
func Hash32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// DropoutScale returns the mask value of element i for a dropout with probability p and seed:
// 0 when dropped, else 1/(1-p). Element i is dropped when its uniform draw
// u = (Hash32(i ^ Hash32(seedLo ^ Hash32(seedHi))) >> 8) / 2^24 is below p.
func DropoutScale(seed uint64, i uint32, p float32) float32 {
	key := Hash32(uint32(seed) ^ Hash32(uint32(seed>>32)))
	u := float32(Hash32(i^key)>>8) * (1.0 / (1 << 24))
	if u < p {
		return 0
	}
	return 1 / (1 - p)
}
