package mpi

import "math"

// HashFloat32s is FNV-1a over the bits of xs: equal hashes on every rank mean, to a 64-bit
// hash, equal replicas.
func HashFloat32s(xs []float32) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range xs {
		b := math.Float32bits(x)
		for range 4 {
			h ^= uint64(b & 0xff)
			h *= 1099511628211
			b >>= 8
		}
	}
	return h
}

// CheckSameFloat32s returns an error naming the ranks whose xs (parameters, say) differ from
// rank 0's.
func (c *Comm) CheckSameFloat32s(what string, xs []float32) error {
	return c.CheckSame(what, HashFloat32s(xs))
}
