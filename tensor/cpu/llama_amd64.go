//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:generate go run swiglu_gen.go

// The vector kernels of the Llama ops (llama_amd64.s, and swiglu_amd64.s written by
// swiglu_gen.go). Each wrapper runs its kernel on the leading multiple of the vector width
// and returns how many elements (columns, for rmsWeightColsVector) it did; the caller
// finishes the rest with the same arithmetic in Go.

// llamaVector switches the kernels on (tests switch it off to compare); llamaAVX512 picks the
// sixteen-lane SwiGLU kernels where the CPU has them (tests switch it off to run the eight-lane
// ones). The other kernels move more memory than they compute and run eight lanes everywhere:
// sixteen-lane versions of them measured no faster on Qwen2.5-0.5B's shapes.
var (
	llamaVector = haveAVX2FMA
	llamaAVX512 = cpu.X86.HasAVX512F
)

//go:noescape
func swigluFwd8AVX2(out, gate, up *float32, n int)

//go:noescape
func swigluBwd8AVX2(dgate, dup, gate, up, dout *float32, n int)

//go:noescape
func swigluFwd16AVX512(out, gate, up *float32, n int)

//go:noescape
func swigluBwd16AVX512(dgate, dup, gate, up, dout *float32, n int)

//go:noescape
func rmsSumSquares8AVX2(x *float32, n int, acc *[8]float32)

//go:noescape
func rmsDot3x8AVX2(a, b, c *float32, n int, acc *[8]float32)

//go:noescape
func rmsScale8AVX2(out, x, w *float32, n int, s float32)

//go:noescape
func rmsBwdApply8AVX2(dinp, dout, x, w *float32, n int, s, k float32)

//go:noescape
func rmsWeightCol32AVX2(dw, d, x, rstd *float32, rows, stride int)

//go:noescape
func rope8AVX2(o, x, cos, sin *float32, n, half int)

//go:noescape
func ropeBwd8AVX2(dinp, grad, cos, sin *float32, n, half int)

// vectorLen is how much of n the kernels of the given width take.
func vectorLen(n, width int) int {
	if !llamaVector {
		return 0
	}
	return n &^ (width - 1)
}

func swigluVector(out, gate, up []float32) int {
	done := 0
	if n := vectorLen(len(out), 16); llamaAVX512 && n > 0 {
		_, _ = gate[n-1], up[n-1]
		swigluFwd16AVX512(&out[0], &gate[0], &up[0], n)
		done = n
	}
	if n := vectorLen(len(out)-done, 8); n > 0 {
		_, _ = gate[done+n-1], up[done+n-1]
		swigluFwd8AVX2(&out[done], &gate[done], &up[done], n)
		done += n
	}
	return done
}

func swigluBackwardVector(dgate, dup, gate, up, dout []float32) int {
	done := 0
	if n := vectorLen(len(dout), 16); llamaAVX512 && n > 0 {
		_, _, _, _ = dgate[n-1], dup[n-1], gate[n-1], up[n-1]
		swigluBwd16AVX512(&dgate[0], &dup[0], &gate[0], &up[0], &dout[0], n)
		done = n
	}
	if n := vectorLen(len(dout)-done, 8); n > 0 {
		e := done + n - 1
		_, _, _, _, _ = dgate[e], dup[e], gate[e], up[e], dout[e]
		swigluBwd8AVX2(&dgate[done], &dup[done], &gate[done], &up[done], &dout[done], n)
		done += n
	}
	return done
}

func rmsSumSquaresVector(x []float32, acc *[8]float32) int {
	n := vectorLen(len(x), 8)
	if n > 0 {
		rmsSumSquares8AVX2(&x[0], n, acc)
	}
	return n
}

// rmsDot3Vector adds a·b·c, multiplied in that order, into acc.
func rmsDot3Vector(a, b, c []float32, acc *[8]float32) int {
	n := vectorLen(len(c), 8)
	if n > 0 {
		_, _ = a[n-1], b[n-1]
		rmsDot3x8AVX2(&a[0], &b[0], &c[0], n, acc)
	}
	return n
}

func rmsScaleVector(out, x, w []float32, s float32) int {
	n := vectorLen(len(x), 8)
	if n > 0 {
		_, _ = out[n-1], w[n-1]
		rmsScale8AVX2(&out[0], &x[0], &w[0], n, s)
	}
	return n
}

func rmsBackwardApplyVector(dinp, dout, x, w []float32, s, k float32) int {
	n := vectorLen(len(x), 8)
	if n > 0 {
		_, _, _ = dinp[n-1], dout[n-1], w[n-1]
		rmsBwdApply8AVX2(&dinp[0], &dout[0], &x[0], &w[0], n, s, k)
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
		rmsWeightCol32AVX2(&dw[c], &d[c], &x[c], &rstd[0], rows, stride)
	}
	return n
}

func ropeVector(o, x, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 8)
	if n > 0 {
		_, _, _ = o[half+n-1], x[half+n-1], sin[n-1]
		rope8AVX2(&o[0], &x[0], &cos[0], &sin[0], n, half)
	}
	return n
}

func ropeBackwardVector(dx, g, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 8)
	if n > 0 {
		_, _, _ = dx[half+n-1], g[half+n-1], sin[n-1]
		ropeBwd8AVX2(&dx[0], &g[0], &cos[0], &sin[0], n, half)
	}
	return n
}
