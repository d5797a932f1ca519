//go:build (!amd64 && !arm64) || purego

package cpu

// No vector kernels in this build: each reports that it did nothing (norm_other.go,
// rope_other.go, swiglu_other.go).

var llamaVector, llamaAVX512 = false, false
