//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func expAVX2(x *float64, n int)

// haveAVX2FMA gates the AVX2 kernels of this package (FMA for the exponential).
var haveAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expSlice sets x[i] = e^x[i] (see expAVX2 for the accuracy and range).
func expSlice(x []float64) {
	if !haveAVX2FMA {
		expSliceGo(x)
		return
	}
	n := len(x) &^ 3
	if n > 0 {
		expAVX2(&x[0], n)
	}
	if n < len(x) {
		// The tail goes through the same kernel so every element gets the same rounding.
		var t [4]float64
		copy(t[:], x[n:])
		expAVX2(&t[0], 4)
		copy(x[n:], t[:])
	}
}

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

//go:noescape
func divAVX2(x *float32, n int, s float32)

// divScalar sets x[i] /= s.
func divScalar(x []float32, s float32) {
	n := 0
	if haveAVX2FMA {
		n = len(x) &^ 7
		if n > 0 {
			divAVX2(&x[0], n, s)
		}
	}
	for i := n; i < len(x); i++ {
		x[i] /= s
	}
}

//go:noescape
func adamwAVX2(p, grad, m, v *float32, n int, c *[10]float32)

// adamVector runs the vector AdamW on the leading multiple of 8 and reports how many it did.
func adamVector(p, g, m, v []float32, c *[10]float32) int {
	if !haveAVX2FMA {
		return 0
	}
	n := len(p) &^ 7
	if n > 0 {
		_, _, _ = g[n-1], m[n-1], v[n-1]
		adamwAVX2(&p[0], &g[0], &m[0], &v[0], n, c)
	}
	return n
}

//go:noescape
func axpyAVX2(y, x *float32, n int, a float32)

// axpy sets y[i] += a*x[i].
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	n := 0
	if haveAVX2FMA {
		n = len(y) &^ 7
		if n > 0 {
			axpyAVX2(&y[0], &x[0], n, a)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

//go:noescape
func lsgStatsAVX2(l *float32, e *float64, n int, invT, zmax float64, sums *[8]float64)

//go:noescape
func lsgGradAVX2(d *float32, l *float32, e *float64, n int, c *[7]float64)

// lsgVector lets tests run the portable log-softmax loops where the vector kernels exist.
var lsgVector = true

// lsgStatsVec runs lsgStatsAVX2 on the leading multiple of 4 and reports how many it did.
func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int {
	if !haveAVX2FMA || !lsgVector {
		return 0
	}
	n := len(l) &^ 3
	if n > 0 {
		_ = e[n-1]
		lsgStatsAVX2(&l[0], &e[0], n, invT, zmax, sums)
	}
	return n
}

// lsgGradVec runs lsgGradAVX2 on the leading multiple of 4 and reports how many it did.
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int {
	if !haveAVX2FMA || !lsgVector {
		return 0
	}
	n := len(l) &^ 3
	if n > 0 {
		_, _ = d[n-1], e[n-1]
		lsgGradAVX2(&d[0], &l[0], &e[0], n, c)
	}
	return n
}
