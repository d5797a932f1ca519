package cpu

import "math"

// Reductions and column sums with a vector kernel where the CPU has one; each kernel and its
// portable twin compute the same bits.

// sumLanes is the sum (or sum of squares) of x in float64: element i goes to lane i%16, each
// lane accumulates in order (squares with a fused multiply-add), and the lanes are added in
// order at the end.
func sumLanes(x []float32, squares bool) float64 {
	var acc [16]float64
	return sumLanesFrom(x, &acc, squares, sumLanesVector(x, &acc, squares))
}

// sumLanesFrom finishes sumLanes from element n on (the portable loop).
func sumLanesFrom(x []float32, acc *[16]float64, squares bool, n int) float64 {
	for i := n; i < len(x); i++ {
		v := float64(x[i])
		if squares {
			acc[i%16] = math.FMA(v, v, acc[i%16])
		} else {
			acc[i%16] += v
		}
	}
	var s float64
	for _, a := range acc {
		s += a
	}
	return s
}

// colSum adds, for each of the len(db) columns, the rows of d (rows rows, stride apart) to db
// in row order.
func colSum(db, d []float32, rows, stride int) {
	colSumFrom(db, d, rows, stride, colSumVector(db, d, rows, stride))
}

// colSumFrom is colSum's portable loop over the columns from n on.
func colSumFrom(db, d []float32, rows, stride, n int) {
	for r := 0; r < rows; r++ {
		dr := d[r*stride+n : r*stride+len(db)]
		for i, v := range dr {
			db[n+i] += v
		}
	}
}

// lnColSums accumulates LayerNorm's dbias += d and dweight += ((x-mean)·rstd)·d over rows, per
// column in row order (llm.c's layernorm_backward, without fused multiply-adds).
func lnColSums(dw, db, x, d, mean, rstd []float32, rows, stride int) {
	lnColSumsFrom(dw, db, x, d, mean, rstd, rows, stride, lnColVector(dw, db, x, d, mean, rstd, rows, stride))
}

// lnColSumsFrom is lnColSums' portable loop over the columns from n on.
func lnColSumsFrom(dw, db, x, d, mean, rstd []float32, rows, stride, n int) {
	db = db[:len(dw)]
	for r := 0; r < rows; r++ {
		m, s := mean[r], rstd[r]
		xr, dr := x[r*stride+n:r*stride+len(dw)], d[r*stride+n:r*stride+len(dw)]
		for i, xi := range xr {
			norm := float32((xi - m) * s)
			db[n+i] += dr[i]
			dw[n+i] += float32(norm * dr[i])
		}
	}
}

func fillLoop(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}
