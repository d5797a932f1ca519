//go:build amd64 && !purego

package cpu

import "math"

// The kernels of crossentropy.go (crossentropy_amd64.s): a row's maximum, the softmax's
// division by its sum (scaled by the loss gradient when fused), and the log-softmax gather's
// row statistics and gradient.

//go:noescape
func divScaleAVX2(x *float32, n int, s, a float32)

//go:noescape
func maxAVX2(x *float32, n int) float32

// divScalar sets x[i] /= s: divScale by 1, a product that is exact for every value.
func divScalar(x []float32, s float32) { divScale(x, s, 1) }

// divScale sets x[i] = (x[i] / s) * a, the division and the product each rounded.
func divScale(x []float32, s, a float32) {
	n := 0
	if haveAVX2FMA {
		n = len(x) &^ 7
		if n > 0 {
			divScaleAVX2(&x[0], n, s, a)
		}
	}
	divScaleLoop(x[n:], s, a)
}

// maxVector is the largest of the leading multiple of 32 of x (NaN skipped), and how many
// it read; -Inf and 0 without the kernel.
func maxVector(x []float32) (float32, int) {
	n := len(x) &^ 31
	if !haveAVX2FMA || n == 0 {
		return float32(math.Inf(-1)), 0
	}
	return maxAVX2(&x[0], n), n
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
