//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func sumLanesAVX2(x *float32, n int, acc *[16]float64, squares bool)

//go:noescape
func colSum32AVX2(db, d *float32, rows, stride int)

//go:noescape
func lnCol32AVX2(dw, db, x, d, mean, rstd *float32, rows, stride int)

//go:noescape
func fillStreamAVX2(x *float32, n int, v float32)

// fillStream sets x[i] = v, with non-temporal stores for the 32-byte aligned middle.
func fillStream(x []float32, v float32) {
	head := 0
	if haveAVX2FMA && len(x) > 0 {
		head = int((32 - uintptr(unsafe.Pointer(&x[0]))%32) % 32 / 4)
	}
	if head >= len(x) || len(x)-head < 8 {
		fillLoop(x, v)
		return
	}
	n := (len(x) - head) &^ 7
	fillLoop(x[:head], v)
	fillStreamAVX2(&x[head], n, v)
	fillLoop(x[head+n:], v)
}

// sumLanesVector runs the kernel on the first multiple of 16 elements and returns how many.
func sumLanesVector(x []float32, acc *[16]float64, squares bool) int {
	n := len(x) &^ 15
	if !haveAVX2FMA || n == 0 {
		return 0
	}
	sumLanesAVX2(&x[0], n, acc, squares)
	return n
}

// colSumVector sums the columns in whole groups of 32 and returns how many it did.
func colSumVector(db, d []float32, rows, stride int) int {
	n := len(db) &^ 31
	if !haveAVX2FMA || n == 0 || rows == 0 {
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
	if !haveAVX2FMA || n == 0 || rows == 0 {
		return 0
	}
	_, _, _, _, _ = db[n-1], x[(rows-1)*stride+n-1], d[(rows-1)*stride+n-1], mean[rows-1], rstd[rows-1]
	for c := 0; c < n; c += 32 {
		lnCol32AVX2(&dw[c], &db[c], &x[c], &d[c], &mean[0], &rstd[0], rows, stride)
	}
	return n
}
