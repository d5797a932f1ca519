package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The training step's vector kernels (AVX2 on amd64, NEON on arm64: AdamW, the LayerNorm and
// RMSNorm rows, the RMSNorm weight columns, attention's scores and combine, RoPE and SwiGLU,
// whose AVX-512 kernels run too where the CPU has them) against their portable loops, bit for
// bit (NaN for NaN), on every length 0..17 (each tail of a 4- and an 8-lane kernel, behind
// zero, one and two whole vectors) and with special values planted.

// tailLengths are 0..17 and a few longer lengths.
var tailLengths = func() []int {
	var ns []int
	for n := 0; n <= 17; n++ {
		ns = append(ns, n)
	}
	return append(ns, 31, 32, 33, 100)
}()

// specialValues32 are the values where rounding or IEEE rules, not the kernels' algebra, decide
// the result: signed zeros, subnormals, the extremes, the infinities and NaN.
var specialValues32 = []float32{
	0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-40, -3e-39, 1.2e-38, math.MaxFloat32, -math.MaxFloat32,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// planted returns variants of x: x itself, x scaled into the subnormals, and x with each
// special value at position (k*7)%len(x) for the k-th value.
func planted(x []float32) [][]float32 {
	sub := clone(x)
	for i := range sub {
		sub[i] *= 1e-39
	}
	out := [][]float32{x, sub}
	if len(x) == 0 {
		return out
	}
	for k, v := range specialValues32 {
		y := clone(x)
		y[(k*7)%len(y)] = v
		out = append(out, y)
	}
	return out
}

func TestAdamWKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, n := range tailLengths {
		p0, m0 := randn(r, n, 1), randn(r, n, 0.01)
		v0 := randn(r, n, 0.001)
		for i := range v0 {
			v0[i] = float32(math.Abs(float64(v0[i])))
		}
		for vi, g := range planted(randn(r, n, 0.1)) {
			// The planted values go into every operand in turn, the gradient always.
			ps, ms, vs := [][]float32{p0, p0}, [][]float32{m0, m0}, [][]float32{v0, v0}
			if vi >= 2 {
				ps[1], ms[1], vs[1] = g, g, g
			}
			for k := range ps {
				var res [2][3][]float32
				for mode, vector := range []bool{true, false} {
					p, m, v := clone(ps[k]), clone(ms[k]), clone(vs[k])
					j := &adamJob{p: p, g: g, m: m, v: v, lr: 3e-4, b1: 0.9, b2: 0.95, eps: 1e-8, wd: 0.1,
						c1: 0.52, c2: 0.3, gs: 0.75, vector: vector}
					j.run(0, 0)
					res[mode] = [3][]float32{p, m, v}
				}
				for i, name := range []string{"params", "m", "v"} {
					sameBits(t, fmt.Sprintf("AdamW n=%d variant %d/%d %s", n, vi, k, name), res[0][i], res[1][i])
				}
			}
		}
	}
}

func TestLayerNormRowKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, C := range tailLengths {
		if C == 0 {
			continue // no row to normalise
		}
		w, bias, dout, d0 := randn(r, C, 1), randn(r, C, 1), randn(r, C, 1), randn(r, C, 1)
		for vi, x := range planted(randn(r, C, 2)) {
			what := fmt.Sprintf("C=%d variant %d", C, vi)
			out, want := make([]float32, C), make([]float32, C)
			m, s := lnForwardRow(out, x, w, bias)
			wm, ws := lnForwardRowGo(want, x, w, bias)
			sameBits(t, what+" mean, rstd", []float32{m, s}, []float32{wm, ws})
			sameBits(t, what+" lnForwardRow", out, want)
			// The backward meets the specials through dout as well as x.
			for _, g := range [][]float32{dout, x} {
				d, wd := clone(d0), clone(d0)
				lnBackwardRow(d, g, x, w, m, s)
				lnBackwardRowGo(wd, g, x, w, m, s)
				sameBits(t, what+" lnBackwardRow", d, wd)
			}
		}
	}
}

// TestLayerNormColumnKernelEdgeCases checks LayerNorm's dweight and dbias column sums: groups
// of 16 and 32 columns and the tails after them.
func TestLayerNormColumnKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 70))
	for _, C := range []int{15, 16, 17, 31, 32, 33, 49} {
		const rows = 3
		stride := C + 1
		d, mean, rstd := randn(r, rows*stride, 1), randn(r, rows, 1), randn(r, rows, 1)
		dw0, db0 := randn(r, C, 1), randn(r, C, 1)
		for vi, x := range planted(randn(r, rows*stride, 1)) {
			for _, g := range [][]float32{d, x} { // specials in d as well as x
				dw, db, wantW, wantB := clone(dw0), clone(db0), clone(dw0), clone(db0)
				lnColSums(dw, db, x, g, mean, rstd, rows, stride)
				lnColSumsFrom(wantW, wantB, x, g, mean, rstd, rows, stride, 0)
				sameBits(t, fmt.Sprintf("C=%d variant %d dweight", C, vi), dw, wantW)
				sameBits(t, fmt.Sprintf("C=%d variant %d dbias", C, vi), db, wantB)
			}
		}
	}
}

func TestRMSNormKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	for _, n := range tailLengths {
		w, g, d0 := randn(r, n, 1), randn(r, n, 1), randn(r, n, 1)
		for vi, x := range planted(randn(r, n, 1.5)) {
			got := inModes(t, func() [][]float32 {
				out, dinp, dinp2 := make([]float32, n), clone(d0), clone(d0)
				s := rmsNormRow(out, x, w, 1e-6)
				rmsNormBackwardRow(dinp, g, x, w, s)
				rmsNormBackwardRow(dinp2, x, g, w, s) // specials in dout too
				return [][]float32{out, {s}, dinp, dinp2}
			})
			sameBitsAsGo(t, fmt.Sprintf("rmsnorm n=%d variant %d", n, vi), got)
		}
	}
	// The weight gradient's columns: groups of 32 and the tails after them.
	for _, C := range []int{17, 31, 32, 33, 49, 64, 65} {
		const rows = 3
		d, rstd, dw0 := randn(r, rows*C, 1), randn(r, rows, 1), randn(r, C, 1)
		for vi, x := range planted(randn(r, rows*C, 1)) {
			got := inModes(t, func() [][]float32 {
				j := &llamaJob{n: rows, C: C, inp: x, dout: d, rstd: rstd, dw: clone(dw0)}
				rmsWeightGrad(j, 0, C)
				return [][]float32{j.dw}
			})
			sameBitsAsGo(t, fmt.Sprintf("rms dweight C=%d variant %d", C, vi), got)
		}
	}
}

// TestAttentionKernelEdgeCases runs scores and combine by each vector kernel set and by the
// portable loops for 1..4 rows, 0..17 keys (so the last block of 16 is partly padding) and
// head sizes of one and two vectors' worth, with specials in the queries, keys and weights.
func TestAttentionKernelEdgeCases(t *testing.T) {
	if len(attnKernelSets) == 0 {
		t.Skip("no vector attention kernels on this CPU or build")
	}
	r := rand.New(rand.NewPCG(67, 68))
	for _, hs := range []int{16, 32, 80} {
		for n := 0; n <= 17; n++ {
			for nr := 1; nr <= attnRows; nr++ {
				k, x := randn(r, max(n, 1)*hs, 1), randn(r, max(n, 1)*hs, 1)
				out0, w0 := randn(r, nr*hs, 1), randn(r, nr*max(n, 1), 1)
				for vi, q := range planted(randn(r, nr*hs, 1)) {
					what := fmt.Sprintf("hs=%d n=%d rows=%d variant %d", hs, n, nr, vi)
					// Specials in the query rows, then in the keys and values.
					kk, xx := k, x
					if vi >= 2 {
						kk, xx = clone(k), clone(x)
						copy(kk, q[:min(len(q), len(kk))])
						copy(xx, q[:min(len(q), len(xx))])
					}
					w := clone(w0) // nr rows of n weights, ws = n
					copy(w, q)
					nblk := keyBlocks(n)
					kt := make([]float32, max(nblk, 1)*hs*attnBlock)
					packKeys(kt, kk, nil, n, hs, hs, nil)
					want := attnRun(q, kt, w, xx, out0, nr, n, hs, nblk, nil)
					for _, kern := range attnKernelSets {
						got := attnRun(q, kt, w, xx, out0, nr, n, hs, nblk, kern)
						for i, name := range []string{"scores", "combine", "combine+"} {
							sameBits(t, fmt.Sprintf("%s: %s %s", what, kern.name, name), got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// attnRun returns scores of nr query rows against n packed keys, and the combine of x's n rows
// by weights w (rows n apart) set into zeros and added to out0.
func attnRun(q, kt, w, x, out0 []float32, nr, n, hs, nblk int, kern *attnKernels) [3][]float32 {
	s := make([]float32, nr*max(nblk, 1)*attnBlock)
	scores(s, max(nblk, 1)*attnBlock, q, hs, nr, kt, hs, nblk, kern)
	set, add := make([]float32, nr*hs), clone(out0)
	combine(set, hs, nr, w, n, 1, x, hs, n, hs, false, kern)
	combine(add, hs, nr, w, n, 1, x, hs, n, hs, true, kern)
	return [3][]float32{s, set, add}
}

// plantedEach returns, for each operand in turn, the variants planted makes of it with the
// other operands as given: specials in every operand, one at a time.
func plantedEach(ops ...[]float32) [][][]float32 {
	var sets [][][]float32
	for k, op := range ops {
		for _, v := range planted(op) {
			set := slices.Clone(ops)
			set[k] = v
			sets = append(sets, set)
		}
	}
	return sets
}

// TestRoPEKernelEdgeCases rotates heads of every half width 0..17 (and a few longer) forward
// and back, with the specials in the input (also the gradient rotated back), the cosines, the
// sines and the gradient summed into.
func TestRoPEKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, half := range tailLengths {
		x, cos, sin, d0 := randn(r, 2*half, 1), randn(r, half, 1), randn(r, half, 1), randn(r, 2*half, 1)
		for vi, ops := range plantedEach(x, cos, sin, d0) {
			x, cos, sin, d0 := ops[0], ops[1], ops[2], ops[3]
			got := inModes(t, func() [][]float32 {
				o, oOK := guarded(make([]float32, 2*half))
				dx, dxOK := guarded(d0)
				ropeRotate(o, x, cos, sin)
				ropeRotateBack(dx, x, cos, sin)
				mustBeIntact(t, fmt.Sprintf("rope half=%d variant %d", half, vi), oOK, dxOK)
				return [][]float32{o, dx}
			})
			sameBitsAsGo(t, fmt.Sprintf("rope half=%d variant %d", half, vi), got)
		}
	}
}

// TestSwiGLUKernelEdgeCases runs SwiGLU forward and backward on every length 0..17 (and a few
// longer), the gates mixing in the exponential's limits as well as the specials planted in
// each operand: gate, up, dout and the two gradients summed into.
func TestSwiGLUKernelEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for _, n := range tailLengths {
		gate, up, dout := swigluInputs(r, n), randn(r, n, 1), randn(r, n, 1)
		dg0, du0 := randn(r, n, 1), randn(r, n, 1)
		for vi, ops := range plantedEach(gate, up, dout, dg0, du0) {
			gate, up, dout, dg0, du0 := ops[0], ops[1], ops[2], ops[3], ops[4]
			got := swigluInModes(t, fmt.Sprintf("swiglu n=%d variant %d", n, vi), gate, up, dout, dg0, du0)
			sameBitsAsGo(t, fmt.Sprintf("swiglu n=%d variant %d", n, vi), got)
		}
	}
}
