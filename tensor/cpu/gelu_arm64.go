//go:build arm64 && !purego

package cpu

// The NEON GELU kernels (exp32_arm64.s, written by exp32_neon_gen.go), which compute
// gelu.go's bits four lanes at a time.

//go:noescape
func geluFwd4NEON(out, x *float32, n int)

//go:noescape
func geluBwd4NEON(dinp, x, dout *float32, n int)

// geluAVX512 is false: arm64 has no sixteen-lane kernels (the tests read it).
var geluAVX512 = false

// geluForward runs the NEON kernel on whole groups of four values and geluForwardGo, which
// computes the same bits, on the rest.
func geluForward(out, inp []float32) {
	n := len(inp) &^ 3
	if n > 0 {
		_ = out[n-1]
		geluFwd4NEON(&out[0], &inp[0], n)
	}
	geluForwardGo(out[n:], inp[n:])
}

func geluBackward(dinp, inp, dout []float32) {
	n := len(inp) &^ 3
	if n > 0 {
		_, _ = dinp[n-1], dout[n-1]
		geluBwd4NEON(&dinp[0], &inp[0], &dout[0], n)
	}
	geluBackwardGo(dinp[n:], inp[n:], dout[n:])
}
