//go:build !amd64 || purego

package cpu

// No vector kernels in this build: each reports that it did nothing.

var llamaVector, llamaAVX512 = false, false

func swigluVector(out, gate, up []float32) int                      { return 0 }
func swigluBackwardVector(dgate, dup, gate, up, dout []float32) int { return 0 }
func rmsSumSquaresVector(x []float32, acc *[8]float32) int          { return 0 }
func rmsDot3Vector(a, b, c []float32, acc *[8]float32) int          { return 0 }
func rmsScaleVector(out, x, w []float32, s float32) int             { return 0 }
func rmsBackwardApplyVector(dinp, dout, x, w []float32, s, k float32) int {
	return 0
}
func rmsWeightColsVector(dw, d, x, rstd []float32, stride int) int { return 0 }
func ropeVector(o, x, cos, sin []float32) int                      { return 0 }
func ropeBackwardVector(dx, g, cos, sin []float32) int             { return 0 }
