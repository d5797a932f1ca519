//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The vector kernels of the row ops (norm_amd64.s, rope_amd64.s, and swiglu_amd64.s written
// by swiglu_gen.go). Each wrapper runs its kernel on the leading multiple of the vector width
// and returns how many elements (columns, for rmsWeightColsVector) it did; the caller
// finishes the rest with the same arithmetic in Go.

// llamaVector switches the kernels on (tests switch it off to compare); llamaAVX512 picks the
// sixteen-lane SwiGLU kernels where the CPU has them (tests switch it off to run the eight-lane
// ones). The other kernels move more memory than they compute and run eight lanes everywhere:
// sixteen-lane versions of them measured no faster on Qwen2.5-0.5B's shapes.
var (
	llamaVector = haveAVX2FMA
	llamaAVX512 = cpu.X86.HasAVX512F
)

// vectorLen is how much of n the kernels of the given width take.
func vectorLen(n, width int) int {
	if !llamaVector {
		return 0
	}
	return n &^ (width - 1)
}
