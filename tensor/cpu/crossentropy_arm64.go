//go:build arm64 && !purego

package cpu

import "math"

//go:noescape
func divNEON(x *float32, n int, s float32)

// divScalar sets x[i] /= s: the NEON kernel (exp32_arm64.s) on the leading multiple of 4.
func divScalar(x []float32, s float32) {
	n := len(x) &^ 3
	if n > 0 {
		divNEON(&x[0], n, s)
	}
	for i := n; i < len(x); i++ {
		x[i] /= s
	}
}

// The log-softmax gather's float64 kernels exist for amd64 only.

var lsgVector = false

func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int { return 0 }
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int                      { return 0 }

// divScale sets x[i] = (x[i] / s) * a, the division and the product each rounded: the NEON
// division, then the product.
func divScale(x []float32, s, a float32) {
	divScalar(x, s)
	for i := range x {
		x[i] *= a
	}
}

// maxVector: no kernel here; maxf32 scans all of x.
func maxVector(x []float32) (float32, int) { return float32(math.Inf(-1)), 0 }
