//go:build arm64 && !purego

package cpu

// The SwiGLU kernels (exp32_arm64.s, written by exp32_neon_gen.go), which compute swiglu.go's
// bits four lanes at a time with the softmax's NEON exponential.

//go:noescape
func swigluFwd4NEON(out, gate, up *float32, n int)

//go:noescape
func swigluBwd4NEON(dgate, dup, gate, up, dout *float32, n int)

func swigluVector(out, gate, up []float32) int {
	n := vectorLen(len(out), 4)
	if n > 0 {
		_, _ = gate[n-1], up[n-1]
		swigluFwd4NEON(&out[0], &gate[0], &up[0], n)
	}
	return n
}

func swigluBackwardVector(dgate, dup, gate, up, dout []float32) int {
	n := vectorLen(len(dout), 4)
	if n > 0 {
		_, _, _, _ = dgate[n-1], dup[n-1], gate[n-1], up[n-1]
		swigluBwd4NEON(&dgate[0], &dup[0], &gate[0], &up[0], &dout[0], n)
	}
	return n
}
