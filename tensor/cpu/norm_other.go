//go:build (!amd64 && !arm64) || purego

package cpu

func lnForwardRow(out, x, w, bias []float32) (float32, float32) {
	return lnForwardRowGo(out, x, w, bias)
}

func lnBackwardRow(dinp, dout, x, w []float32, m, s float32) {
	lnBackwardRowGo(dinp, dout, x, w, m, s)
}

func rmsSumSquaresVector(x []float32, acc *[8]float32) int { return 0 }
func rmsDot3Vector(a, b, c []float32, acc *[8]float32) int { return 0 }
func rmsScaleVector(out, x, w []float32, s float32) int    { return 0 }
func rmsBackwardApplyVector(dinp, dout, x, w []float32, s, k float32) int {
	return 0
}
func rmsWeightColsVector(dw, d, x, rstd []float32, stride int) int { return 0 }
