//go:build arm64 && !purego

package cpu

// LayerNorm's column sums run in NEON (lnCol16NEON in norm_arm64.s); the float64 lane sums,
// the bias column sums and the fill have no arm64 kernels.

//go:noescape
func lnCol16NEON(dw, db, x, d, mean, rstd *float32, rows, stride int)

func sumLanesVector(x []float32, acc *[16]float64, squares bool) int { return 0 }

func colSumVector(db, d []float32, rows, stride int) int { return 0 }

func fillStream(x []float32, v float32) { fillLoop(x, v) }

// lnColVector runs the column kernel on whole groups of 16 columns and returns how many it did.
func lnColVector(dw, db, x, d, mean, rstd []float32, rows, stride int) int {
	n := vectorLen(len(dw), 16)
	if n == 0 || rows == 0 {
		return 0
	}
	_, _, _, _, _ = db[n-1], x[(rows-1)*stride+n-1], d[(rows-1)*stride+n-1], mean[rows-1], rstd[rows-1]
	for c := 0; c < n; c += 16 {
		lnCol16NEON(&dw[c], &db[c], &x[c], &d[c], &mean[0], &rstd[0], rows, stride)
	}
	return n
}
