//go:build (!amd64 && !arm64) || purego

package cpu

// divScalar sets x[i] /= s.
func divScalar(x []float32, s float32) {
	for i := range x {
		x[i] /= s
	}
}

var lsgVector = false

func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int { return 0 }
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int                      { return 0 }
