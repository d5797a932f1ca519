//go:build !amd64 || purego

package cpu

// expSlice sets x[i] = e^x[i].
func expSlice(x []float64) { expSliceGo(x) }

// geluAVX512 is false: there are no vector kernels in this build.
var geluAVX512 = false

func geluForward(out, inp []float32)         { geluForwardGo(out, inp) }
func geluBackward(dinp, inp, dout []float32) { geluBackwardGo(dinp, inp, dout) }

// divScalar sets x[i] /= s.
func divScalar(x []float32, s float32) {
	for i := range x {
		x[i] /= s
	}
}

func adamVector(p, g, m, v []float32, c *[10]float32) int { return 0 }

// axpy sets y[i] += a*x[i].
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

var lsgVector = false

func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int { return 0 }
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int                      { return 0 }
