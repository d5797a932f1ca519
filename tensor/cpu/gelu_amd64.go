//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The GELU kernels (gelu_amd64.s, written by gelu_gen.go, with the exponential of
// exp32_amd64.h, written by exp32_gen.go), which compute gelu.go's bits.

//go:noescape
func geluFwd8AVX2(out, x *float32, n int)

//go:noescape
func geluBwd8AVX2(dinp, x, dout *float32, n int)

//go:noescape
func geluFwd16AVX512(out, x *float32, n int)

//go:noescape
func geluBwd16AVX512(dinp, x, dout *float32, n int)

// geluAVX512 gates the sixteen-lane GELU kernels (tests switch it off to compare).
var geluAVX512 = cpu.X86.HasAVX512F

// geluForward runs the widest vector kernel on whole groups of sixteen or eight values and
// geluForwardGo, which computes the same bits, on the rest.
func geluForward(out, inp []float32) {
	if n := len(inp) &^ 15; geluAVX512 && n > 0 {
		_ = out[n-1]
		geluFwd16AVX512(&out[0], &inp[0], n)
		out, inp = out[n:], inp[n:]
	}
	n := 0
	if haveAVX2FMA {
		n = len(inp) &^ 7
		if n > 0 {
			_ = out[n-1]
			geluFwd8AVX2(&out[0], &inp[0], n)
		}
	}
	geluForwardGo(out[n:], inp[n:])
}

func geluBackward(dinp, inp, dout []float32) {
	if n := len(inp) &^ 15; geluAVX512 && n > 0 {
		_, _ = dinp[n-1], dout[n-1]
		geluBwd16AVX512(&dinp[0], &inp[0], &dout[0], n)
		dinp, inp, dout = dinp[n:], inp[n:], dout[n:]
	}
	n := 0
	if haveAVX2FMA {
		n = len(inp) &^ 7
		if n > 0 {
			_, _ = dinp[n-1], dout[n-1]
			geluBwd8AVX2(&dinp[0], &inp[0], &dout[0], n)
		}
	}
	geluBackwardGo(dinp[n:], inp[n:], dout[n:])
}
