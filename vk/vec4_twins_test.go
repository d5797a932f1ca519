package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// vec4Twin runs an op twice, on operands starting on a vec4 (off 4) and one element off (off
// 1), and wants kernel to run only on the first and the outputs to have the same bits.
func vec4Twin(t *testing.T, vb *Backend, what, kernel string, run func(off int) []float32) {
	t.Helper()
	var wide, narrow []float32
	wideCalls := mmRunKernels(t, vb, func() { wide = run(4) })
	narrowCalls := mmRunKernels(t, vb, func() { narrow = run(1) })
	if wideCalls[kernel] == 0 || narrowCalls[kernel] != 0 {
		t.Fatalf("%s: %s ran %d times on aligned operands and %d on unaligned ones, want some and none", what, kernel, wideCalls[kernel], narrowCalls[kernel])
	}
	if len(wide) != len(narrow) {
		t.Fatalf("%s: %d outputs through vec4s, %d one float at a time", what, len(wide), len(narrow))
	}
	for i := range wide {
		if math.Float32bits(wide[i]) != math.Float32bits(narrow[i]) {
			t.Fatalf("%s: out[%d] = %g through vec4s, %g one float at a time", what, i, wide[i], narrow[i])
		}
	}
}

// TestEncoderWteVec4MatchesScalar scatters rows with repeated tokens into a table whose views
// start on a vec4 and one element off, in one window and chunked, and wants the same bits.
func TestEncoderWteVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, s := range []struct{ B, T, C, V int }{{2, 5, 8, 6}, {3, 3, 300, 20}, {2, 17, 48, 5}, {1, 40, 4, 3}} {
			r := rand.New(rand.NewPCG(uint64(s.C), 7))
			dwte, dout := randVec(r, s.V*s.C), randVec(r, s.B*s.T*s.C)
			tokens := backendtest.Tokens(r, s.B*s.T, s.V)
			what := fmt.Sprintf("%s B=%d T=%d C=%d V=%d", name, s.B, s.T, s.C, s.V)
			vec4Twin(t, vb, what, "encoder_backward_wte_vec4", func(off int) []float32 {
				dw, do := backendtest.OnBackend(t, vb, dwte, off), backendtest.OnBackend(t, vb, dout, off)
				vb.scatterTokenRows("EncoderBackward", dw, do, backendtest.PlaceInt32(t, vb, tokens), s.B, s.T, s.C)
				return download(t, vb, dw)
			})
		}
	}
}

// TestReduceVec4MatchesScalar sums and sums the squares of vectors starting on a vec4 and
// one element off, in one workgroup, in many and in chunks, and wants the same bits.
func TestReduceVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, n := range []int{4, 1000, 4096, 100_000} {
			r := rand.New(rand.NewPCG(uint64(n), 9))
			x := randVec(r, n)
			for _, squares := range []bool{false, true} {
				op, kernel := "Sum", "sum_vec4"
				if squares {
					op, kernel = "SumSquares", "sumsquares_vec4"
				}
				vec4Twin(t, vb, fmt.Sprintf("%s %s n=%d", name, op, n), kernel, func(off int) []float32 {
					out := backendtest.OnBackend(t, vb, []float32{0}, 0)
					if squares {
						vb.SumSquares(out, backendtest.OnBackend(t, vb, x, off))
					} else {
						vb.Sum(out, backendtest.OnBackend(t, vb, x, off))
					}
					return download(t, vb, out)
				})
			}
		}
	}
}

// TestGeluBackwardVec4MatchesScalar accumulates GELU's gradient at inputs across the kernel's
// branches (the series near 0, tanh from exp, saturation, sech² rounding to 0) into views
// starting on a vec4 and one element off, in one window and chunked, and wants the same bits.
func TestGeluBackwardVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, n := range []int{8, 1000, 5000} {
			r := rand.New(rand.NewPCG(uint64(n), 11))
			inp, dout, dinp := randVec(r, n), randVec(r, n), randVec(r, n)
			for i := range inp {
				inp[i] *= []float32{0.01, 1, 3, 30, 80}[i%5]
			}
			vec4Twin(t, vb, fmt.Sprintf("%s n=%d", name, n), "gelu_backward_vec4", func(off int) []float32 {
				d := backendtest.OnBackend(t, vb, dinp, off)
				vb.GeluBackward(d, backendtest.OnBackend(t, vb, inp, off), backendtest.OnBackend(t, vb, dout, off))
				return download(t, vb, d)
			})
		}
	}
}

// TestBiasBackwardVec4MatchesScalar sums the columns of blocks starting on a vec4 and one
// element off, in one pass, through partials and in chunks of rows and of columns, and wants
// the same bits.
func TestBiasBackwardVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, sh := range [][2]int{{7, 8}, {64, 128}, {300, 36}, {1000, 72}, {2, 1500}} {
			N, C := sh[0], sh[1]
			r := rand.New(rand.NewPCG(uint64(N), uint64(C)))
			dout, dbias := randVec(r, N*C), randVec(r, C)
			vec4Twin(t, vb, fmt.Sprintf("%s N=%d C=%d", name, N, C), "bias_backward_vec4", func(off int) []float32 {
				db := backendtest.OnBackend(t, vb, dbias, off)
				vb.BiasBackward(db, backendtest.OnBackend(t, vb, dout, off), N, C)
				return download(t, vb, db)
			})
		}
	}
}
