package cpu

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// kernelLengths cover empty vectors, tails of every size and several whole vectors of 8 and 16.
var kernelLengths = []int{1, 7, 8, 15, 16, 17, 33, 1000, 1031}

// llamaMode is one way to run the Llama kernels: sixteen lanes, eight lanes, or Go alone.
type llamaMode struct {
	name      string
	vec, wide bool
}

// llamaVectorName names the eight- or four-lane kernels' mode.
var llamaVectorName = map[string]string{"amd64": "avx2", "arm64": "neon"}[runtime.GOARCH]

// llamaModes lists the modes this machine runs, the portable Go last (the reference).
func llamaModes() []llamaMode {
	var ms []llamaMode
	if llamaVector && llamaAVX512 {
		ms = append(ms, llamaMode{"avx512", true, true})
	}
	if llamaVector {
		ms = append(ms, llamaMode{llamaVectorName, true, false})
	}
	return append(ms, llamaMode{"go", false, false})
}

// inModes runs fn once per mode, the kernel switches set for it, and returns its results.
func inModes(t *testing.T, fn func() [][]float32) map[string][][]float32 {
	t.Helper()
	defer func(v, w bool) { llamaVector, llamaAVX512 = v, w }(llamaVector, llamaAVX512)
	got := map[string][][]float32{}
	for _, m := range llamaModes() {
		llamaVector, llamaAVX512 = m.vec, m.wide
		got[m.name] = fn()
	}
	return got
}

// sameBitsAsGo fails unless every mode's results equal the portable Go's bit for bit (any NaN
// matching any NaN).
func sameBitsAsGo(t *testing.T, what string, got map[string][][]float32) {
	t.Helper()
	ref := got["go"]
	for name, res := range got {
		for k := range res {
			for i := range res[k] {
				a, b := res[k][i], ref[k][i]
				if math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
					t.Fatalf("%s, %s, result %d [%d]: %v, Go gives %v", what, name, k, i, a, b)
				}
			}
		}
	}
}

// guarded returns a copy of x one element into a larger slice whose other elements are NaN (so
// vector loads and stores are unaligned), and a check that those elements are untouched.
func guarded(x []float32) ([]float32, func() bool) {
	whole := make([]float32, len(x)+17)
	nan := math.Float32bits(float32(math.NaN()))
	for i := range whole {
		whole[i] = math.Float32frombits(nan)
	}
	v := whole[1 : 1+len(x)]
	copy(v, x)
	return v, func() bool {
		for i, e := range whole {
			if (i == 0 || i > len(x)) && math.Float32bits(e) != nan {
				return false
			}
		}
		return true
	}
}

// mustBeIntact fails the test where a guard check reports a write outside its slice.
func mustBeIntact(t *testing.T, what string, intact ...func() bool) {
	t.Helper()
	for k, ok := range intact {
		if !ok() {
			t.Fatalf("%s: slice %d was written outside its bounds", what, k)
		}
	}
}

func TestRMSNormRowKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, n := range kernelLengths {
		x, _ := guarded(randn(r, n, 1.5))
		w, _ := guarded(randn(r, n, 1))
		g, _ := guarded(randn(r, n, 1))
		d0 := randn(r, n, 1)
		got := inModes(t, func() [][]float32 {
			out, outOK := guarded(make([]float32, n))
			dinp, dinpOK := guarded(d0)
			s := rmsNormRow(out, x, w, 1e-6)
			rmsNormBackwardRow(dinp, g, x, w, s)
			mustBeIntact(t, fmt.Sprintf("rmsnorm n=%d", n), outOK, dinpOK)
			return [][]float32{out, {s}, dinp}
		})
		sameBitsAsGo(t, fmt.Sprintf("n=%d", n), got)

		// The Go results against float64 arithmetic.
		var ss, gwx float64
		for i := range x {
			ss += float64(x[i]) * float64(x[i])
			gwx += float64(g[i]) * float64(w[i]) * float64(x[i])
		}
		s := 1 / math.Sqrt(ss/float64(n)+1e-6)
		wantOut, wantD := make([]float64, n), make([]float64, n)
		for i := range x {
			wantOut[i] = float64(w[i]) * float64(x[i]) * s
			wantD[i] = float64(d0[i]) + s*float64(w[i])*float64(g[i]) - float64(x[i])*s*s*s*gwx/float64(n)
		}
		near(t, fmt.Sprintf("rmsnorm n=%d", n), got["go"][0], wantOut, 1e-6, 1e-5)
		near(t, fmt.Sprintf("rmsnorm rstd n=%d", n), got["go"][1], []float64{s}, 0, 1e-6)
		near(t, fmt.Sprintf("rmsnorm dx n=%d", n), got["go"][2], wantD, 1e-5, 1e-4)
	}
}

func TestRMSWeightGradKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, C := range []int{1, 7, 8, 31, 32, 33, 64, 100, 1031} {
		const rows = 5
		x, d, rstd := randn(r, rows*C, 1), randn(r, rows*C, 1), randn(r, rows, 1)
		dw0 := randn(r, C, 1)
		got := inModes(t, func() [][]float32 {
			j := &llamaJob{n: rows, C: C, inp: x, dout: d, rstd: rstd, dw: clone(dw0)}
			for lo := 0; lo < C; lo += colChunk {
				rmsWeightGrad(j, lo, min(lo+colChunk, C))
			}
			return [][]float32{j.dw}
		})
		sameBitsAsGo(t, fmt.Sprintf("C=%d", C), got)
		want := to64(dw0)
		for r := range rows {
			for c := range C {
				want[c] += float64(d[r*C+c]) * float64(x[r*C+c]) * float64(rstd[r])
			}
		}
		near(t, fmt.Sprintf("dweight C=%d", C), got["go"][0], want, 1e-5, 1e-5)
	}
}

func TestRoPEKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	for _, half := range kernelLengths {
		x, g, d0 := randn(r, 2*half, 1), randn(r, 2*half, 1), randn(r, 2*half, 1)
		cos, sin := make([]float32, half), make([]float32, half)
		for i := range cos {
			a := r.Float64() * 2 * math.Pi
			cos[i], sin[i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
		got := inModes(t, func() [][]float32 {
			o, oOK := guarded(make([]float32, 2*half))
			dx, dxOK := guarded(d0)
			ropeRotate(o, x, cos, sin)
			ropeRotateBack(dx, g, cos, sin)
			mustBeIntact(t, fmt.Sprintf("rope half=%d", half), oOK, dxOK)
			return [][]float32{o, dx}
		})
		sameBitsAsGo(t, fmt.Sprintf("half=%d", half), got)
		wantO, wantD := make([]float64, 2*half), to64(d0)
		for i := range half {
			c, s := float64(cos[i]), float64(sin[i])
			x0, x1, g0, g1 := float64(x[i]), float64(x[i+half]), float64(g[i]), float64(g[i+half])
			wantO[i], wantO[i+half] = x0*c-x1*s, x1*c+x0*s
			wantD[i] += g0*c + g1*s
			wantD[i+half] += g1*c - g0*s
		}
		near(t, fmt.Sprintf("rope half=%d", half), got["go"][0], wantO, 1e-6, 1e-5)
		near(t, fmt.Sprintf("rope back half=%d", half), got["go"][1], wantD, 1e-6, 1e-5)
	}
}

// swigluInputs returns n gate values, normal with a few large, tiny and special ones mixed in
// (the exponential's clamps at -104 and 89, infinities, NaN, signed zeros).
func swigluInputs(r *rand.Rand, n int) []float32 {
	g := randn(r, n, 3)
	special := []float32{0, float32(math.Copysign(0, -1)), 103.9, 104, 104.1, -88.7, -89, -90, 150, -150, 1e-30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38, 20, -20}
	for i := range g {
		if i%3 == 1 {
			g[i] = special[(i/3)%len(special)]
		}
	}
	return g
}

// swigluInModes runs SwiGLU forward and backward (the gradients added to copies of dg0 and
// du0) in every kernel mode, each output guarded against writes outside it.
func swigluInModes(t *testing.T, name string, gate, up, dout, dg0, du0 []float32) map[string][][]float32 {
	t.Helper()
	return inModes(t, func() [][]float32 {
		out, outOK := guarded(make([]float32, len(gate)))
		dg, dgOK := guarded(dg0)
		du, duOK := guarded(du0)
		swigluRange(out, gate, up)
		swigluBackwardRange(dg, du, gate, up, dout)
		mustBeIntact(t, name, outOK, dgOK, duOK)
		return [][]float32{out, dg, du}
	})
}

func TestSwiGLUKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	for _, n := range append(kernelLengths, 4099) {
		gate, up, dout := swigluInputs(r, n), randn(r, n, 1), randn(r, n, 1)
		up, _ = guarded(up)
		dout, _ = guarded(dout)
		dg0, du0 := randn(r, n, 1), randn(r, n, 1)
		got := swigluInModes(t, fmt.Sprintf("swiglu n=%d", n), gate, up, dout, dg0, du0)
		sameBitsAsGo(t, fmt.Sprintf("n=%d", n), got)
		if n == 1 {
			t.Logf("modes compared: %v", slices.Sorted(maps.Keys(got)))
		}

		// The Go results against float64 arithmetic, on the finite inputs of moderate size.
		for i, g := range gate {
			x := float64(g)
			if math.IsNaN(x) || math.Abs(x) > 50 {
				continue
			}
			s := 1 / (1 + math.Exp(-x))
			want := []float64{x * s * float64(up[i]),
				float64(dg0[i]) + float64(dout[i])*float64(up[i])*s*(1+x*(1-s)),
				float64(du0[i]) + float64(dout[i])*x*s}
			for k, w := range want {
				if v := float64(got["go"][k][i]); math.Abs(v-w) > 1e-6+1e-5*math.Abs(w) {
					t.Fatalf("n=%d: result %d at gate %v: %v, want %v", n, k, g, v, w)
				}
			}
		}
	}
}

// TestPackQKVBackwardOrder checks PackQKVBackward's bits against the plain loop it must match
// (each KV head's copies summed in head order, then added), for head widths on both sides of
// the summing buffer.
func TestPackQKVBackwardOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(59, 60))
	b := New()
	defer b.Close()
	for _, sh := range []struct{ N, H, KV, D int }{{3, 4, 4, 8}, {2, 4, 2, 7}, {5, 14, 2, 64}, {2, 6, 3, 300}} {
		N, H, KV, D := sh.N, sh.H, sh.KV, sh.D
		dqkv := randn(r, 3*N*H*D, 1)
		dq0, dk0, dv0 := randn(r, N*H*D, 1), randn(r, N*KV*D, 1), randn(r, N*KV*D, 1)
		dq, dk, dv := mk(t, b, dq0, N*H*D), mk(t, b, dk0, N*KV*D), mk(t, b, dv0, N*KV*D)
		b.PackQKVBackward(dq, dk, dv, mk(t, b, dqkv, 3*N*H*D), N, H, KV, D)

		rep := H / KV
		for row := range N {
			in := dqkv[row*3*H*D:]
			for i := range H * D {
				dq0[row*H*D+i] += in[i]
			}
			for part, dst := range [][]float32{dk0, dv0} {
				src := in[(part+1)*H*D:]
				for i := range KV * D {
					g, d := i/D, i%D
					s := src[g*rep*D+d]
					for c := 1; c < rep; c++ {
						s += src[(g*rep+c)*D+d]
					}
					dst[row*KV*D+i] += s
				}
			}
		}
		for _, c := range []struct {
			name      string
			got, want []float32
		}{{"dq", Float32s(dq), dq0}, {"dk", Float32s(dk), dk0}, {"dv", Float32s(dv), dv0}} {
			if !bitsEqual(c.got, c.want) {
				t.Errorf("%+v: %s differs from the plain loop", sh, c.name)
			}
		}
	}
}
