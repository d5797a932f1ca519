//go:build !amd64 || purego

package cpu

func sumLanesVector(x []float32, acc *[16]float64, squares bool) int { return 0 }

func colSumVector(db, d []float32, rows, stride int) int { return 0 }

func lnColVector(dw, db, x, d, mean, rstd []float32, rows, stride int) int { return 0 }

func lnForwardRow(out, x, w, bias []float32) (float32, float32) {
	return lnForwardRowGo(out, x, w, bias)
}

func lnBackwardRow(dinp, dout, x, w []float32, m, s float32) {
	lnBackwardRowGo(dinp, dout, x, w, m, s)
}

func fillStream(x []float32, v float32) { fillLoop(x, v) }
