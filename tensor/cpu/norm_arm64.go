//go:build arm64 && !purego

package cpu

// The LayerNorm and RMSNorm row kernels (norm_arm64.s, written by norm_neon_gen.go).

//go:noescape
func lnFwdRowNEON(out, x, w, b *float32, n int, cf float32, stats *[2]float32)

//go:noescape
func lnBwdRowNEON(dinp, dout, x, w *float32, n int, m, s, cf float32)

// lnForwardRow is lnForwardRowGo, by the NEON kernel when the row is a multiple of 8 long.
func lnForwardRow(out, x, w, bias []float32) (float32, float32) {
	C := len(x)
	if !llamaVector || C == 0 || C%8 != 0 {
		return lnForwardRowGo(out, x, w, bias)
	}
	_, _, _ = out[C-1], w[C-1], bias[C-1]
	var stats [2]float32
	lnFwdRowNEON(&out[0], &x[0], &w[0], &bias[0], C, float32(C), &stats)
	return stats[0], stats[1]
}

// lnBackwardRow is lnBackwardRowGo, by the NEON kernel when the row is a multiple of 8 long.
func lnBackwardRow(dinp, dout, x, w []float32, m, s float32) {
	C := len(x)
	if !llamaVector || C == 0 || C%8 != 0 {
		lnBackwardRowGo(dinp, dout, x, w, m, s)
		return
	}
	_, _, _ = dinp[C-1], dout[C-1], w[C-1]
	lnBwdRowNEON(&dinp[0], &dout[0], &x[0], &w[0], C, m, s, float32(C))
}

//go:noescape
func rmsSumSquares8NEON(x *float32, n int, acc *[8]float32)

//go:noescape
func rmsDot3x8NEON(a, b, c *float32, n int, acc *[8]float32)

//go:noescape
func rmsScale4NEON(out, x, w *float32, n int, s float32)

//go:noescape
func rmsBwdApply4NEON(dinp, dout, x, w *float32, n int, s, k float32)

//go:noescape
func rmsWeightCol32NEON(dw, d, x, rstd *float32, rows, stride int)

// rmsSumSquaresVector adds x[i]² into acc[i%8] for the leading multiple of 8.
func rmsSumSquaresVector(x []float32, acc *[8]float32) int {
	n := vectorLen(len(x), 8)
	if n > 0 {
		rmsSumSquares8NEON(&x[0], n, acc)
	}
	return n
}

// rmsDot3Vector adds a·b·c, multiplied in that order, into acc.
func rmsDot3Vector(a, b, c []float32, acc *[8]float32) int {
	n := vectorLen(len(c), 8)
	if n > 0 {
		_, _ = a[n-1], b[n-1]
		rmsDot3x8NEON(&a[0], &b[0], &c[0], n, acc)
	}
	return n
}

func rmsScaleVector(out, x, w []float32, s float32) int {
	n := vectorLen(len(x), 4)
	if n > 0 {
		_, _ = out[n-1], w[n-1]
		rmsScale4NEON(&out[0], &x[0], &w[0], n, s)
	}
	return n
}

func rmsBackwardApplyVector(dinp, dout, x, w []float32, s, k float32) int {
	n := vectorLen(len(x), 4)
	if n > 0 {
		_, _, _ = dinp[n-1], dout[n-1], w[n-1]
		rmsBwdApply4NEON(&dinp[0], &dout[0], &x[0], &w[0], n, s, k)
	}
	return n
}

// rmsWeightColsVector runs the column kernel on whole groups of 32 columns of dw, over the
// len(rstd) rows of d and x, stride apart.
func rmsWeightColsVector(dw, d, x, rstd []float32, stride int) int {
	n, rows := vectorLen(len(dw), 32), len(rstd)
	if n == 0 || rows == 0 {
		return 0
	}
	last := (rows-1)*stride + n - 1
	_, _ = d[last], x[last]
	for c := 0; c < n; c += 32 {
		rmsWeightCol32NEON(&dw[c], &d[c], &x[c], &rstd[0], rows, stride)
	}
	return n
}
