//go:build arm64 && !purego

package cpu

// The NEON kernels of the row ops (norm_arm64.go, rope_arm64.go, swiglu_arm64.go). Each wrapper
// runs its kernel on the leading multiple of its width and returns how many elements (columns,
// for rmsWeightColsVector) it did; the caller finishes the rest with the same arithmetic in Go.

// llamaVector switches the kernels on (tests switch it off to compare); arm64 has no
// sixteen-lane kernels.
var llamaVector, llamaAVX512 = true, false

// vectorLen is how much of n the kernels of the given width take.
func vectorLen(n, width int) int {
	if !llamaVector {
		return 0
	}
	return n &^ (width - 1)
}
