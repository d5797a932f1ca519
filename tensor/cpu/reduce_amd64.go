//go:build amd64 && !purego

package cpu

//go:noescape
func sumLanesAVX2(x *float32, n int, acc *[16]float64, squares bool)

//go:noescape
func colSum32AVX2(db, d *float32, rows, stride int)

//go:noescape
func lnCol32AVX2(dw, db, x, d, mean, rstd *float32, rows, stride int)

// sumLanesVector runs the kernel on the first multiple of 16 elements and returns how many.
func sumLanesVector(x []float32, acc *[16]float64, squares bool) int {
	n := len(x) &^ 15
	if !haveExpAVX2 || n == 0 {
		return 0
	}
	sumLanesAVX2(&x[0], n, acc, squares)
	return n
}

// colSumVector sums the columns in whole groups of 32 and returns how many it did.
func colSumVector(db, d []float32, rows, stride int) int {
	n := len(db) &^ 31
	if !haveExpAVX2 || n == 0 || rows == 0 {
		return 0
	}
	_ = d[(rows-1)*stride+n-1]
	for c := 0; c < n; c += 32 {
		colSum32AVX2(&db[c], &d[c], rows, stride)
	}
	return n
}

func lnColVector(dw, db, x, d, mean, rstd []float32, rows, stride int) int {
	n := len(dw) &^ 31
	if !haveExpAVX2 || n == 0 || rows == 0 {
		return 0
	}
	_, _, _, _, _ = db[n-1], x[(rows-1)*stride+n-1], d[(rows-1)*stride+n-1], mean[rows-1], rstd[rows-1]
	for c := 0; c < n; c += 32 {
		lnCol32AVX2(&dw[c], &db[c], &x[c], &d[c], &mean[0], &rstd[0], rows, stride)
	}
	return n
}
