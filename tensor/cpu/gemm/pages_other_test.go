//go:build !linux

package gemm

// mapFloats returns n float32s from the Go heap: page sizes cannot be asked for here.
func mapFloats(n int, _ bool) ([]float32, func()) { return make([]float32, n), func() {} }
