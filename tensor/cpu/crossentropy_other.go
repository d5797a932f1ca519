//go:build (!amd64 && !arm64) || purego

package cpu

import "math"

// divScalar sets x[i] /= s.
func divScalar(x []float32, s float32) {
	for i := range x {
		x[i] /= s
	}
}

var lsgVector = false

func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int { return 0 }
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int                      { return 0 }

// divScale sets x[i] = (x[i] / s) * a, the division and the product each rounded.
func divScale(x []float32, s, a float32) { divScaleLoop(x, s, a) }

// maxVector: no kernel here; maxf32 scans all of x.
func maxVector(x []float32) (float32, int) { return float32(math.Inf(-1)), 0 }
