package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The fused neural-network ops against the CPU reference. Each case runs one op (backward ops
// twice, so results show that they accumulate) on the CPU and on Vulkan twice: with the
// device's limits, and with a storage window of a few rows and 3 workgroups, which forces the
// chunking and the grid-stride loops. Every Vulkan tensor is a view inside a larger buffer of
// sentinel values, and the sentinels must survive: ops write only inside their views. The
// device run is repeated to check results are bitwise repeatable.

// nnCheck compares one tensor: |vulkan - cpu| <= atol + rtol*|cpu| elementwise, or bitwise
// when both are 0.
type nnCheck struct {
	name       string
	atol, rtol float64
}

type nnCase struct {
	name   string
	f      map[string][]float32 // float32 inputs, and the initial values of outputs
	i      map[string][]int32
	run    func(be tensor.Backend, x map[string]*tensor.Tensor) // absent names are nil
	checks []nnCheck
	// post checks the Vulkan results further (untouched columns, exact masks).
	post func(t *testing.T, got map[string][]float32)
	// keep names outputs post reads that are not compared with the CPU.
	keep []string
	// chunk is the storage window, in elements, of the chunked run.
	chunk int
}

const (
	nnGuardLo  = 3 // sentinels before and after each view
	nnGuardHi  = 5
	nnSentinel = float32(-1234.5)
)

// nnPlace uploads data into a view nnGuardLo elements into a buffer filled with sentinels.
func nnPlace(t *testing.T, b *Backend, data []float32) (view, full *tensor.Tensor) {
	t.Helper()
	n := len(data)
	full, err := tensor.New(b, tensor.Float32, nnGuardLo+n+nnGuardHi)
	if err != nil {
		t.Fatal(err)
	}
	b.Fill(full, nnSentinel)
	view = full.View(nnGuardLo, n)
	if err := b.Upload(view, data); err != nil {
		t.Fatal(err)
	}
	return view, full
}

func nnPlaceInt(t *testing.T, b *Backend, data []int32) *tensor.Tensor {
	t.Helper()
	full, err := tensor.New(b, tensor.Int32, nnGuardLo+len(data)+nnGuardHi)
	if err != nil {
		t.Fatal(err)
	}
	v := full.View(nnGuardLo, len(data))
	if err := b.UploadInt32(v, data); err != nil {
		t.Fatal(err)
	}
	return v
}

// runVulkan runs c on b and returns the checked tensors, after verifying the sentinels.
func (c nnCase) runVulkan(t *testing.T, b *Backend) map[string][]float32 {
	t.Helper()
	x := map[string]*tensor.Tensor{}
	fulls := map[string]*tensor.Tensor{}
	for name, data := range c.f {
		x[name], fulls[name] = nnPlace(t, b, data)
	}
	for name, data := range c.i {
		x[name] = nnPlaceInt(t, b, data)
	}
	c.run(b, x)
	got := map[string][]float32{}
	for _, ch := range c.checks {
		got[ch.name] = download(t, b, x[ch.name])
	}
	for _, name := range c.keep {
		got[name] = download(t, b, x[name])
	}
	for name, full := range fulls {
		all := download(t, b, full)
		n := len(c.f[name])
		for i, v := range all {
			if (i < nnGuardLo || i >= nnGuardLo+n) && v != nnSentinel {
				t.Fatalf("%s: element %d outside the view of %s (%d elements at %d) changed to %g", c.name, i, name, n, nnGuardLo, v)
			}
		}
	}
	for _, full := range fulls {
		b.Free(full.Storage)
	}
	for _, v := range x {
		b.Free(v.Storage)
	}
	return got
}

func (c nnCase) runCPU(t *testing.T, cb *cpu.Backend) map[string][]float32 {
	t.Helper()
	x := map[string]*tensor.Tensor{}
	var err error
	for name, data := range c.f {
		if x[name], err = tensor.FromSlice(cb, data, len(data)); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range c.i {
		if x[name], err = tensor.FromInt32(cb, data, len(data)); err != nil {
			t.Fatal(err)
		}
	}
	c.run(cb, x)
	got := map[string][]float32{}
	for _, ch := range c.checks {
		if got[ch.name], err = tensor.ToHost(x[ch.name]); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// nnCompare fails when got and want differ beyond the check's bound.
func nnCompare(t *testing.T, what string, ch nnCheck, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if ch.atol == 0 && ch.rtol == 0 {
			if math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s[%d]: vulkan %g, cpu %g (want the same bits)", what, i, g, w)
			}
			continue
		}
		d := math.Abs(float64(g) - float64(w))
		if bound := ch.atol + ch.rtol*math.Abs(float64(w)); !(d <= bound) {
			t.Fatalf("%s[%d]: vulkan %g, cpu %g (|diff| %.3g > %.3g)", what, i, g, w, d, bound)
		}
	}
}

func TestNNParityWithCPU(t *testing.T) { runNNCases(t, nnCases()) }

// runNNCases runs each case on the CPU and on Vulkan (plain, repeated and chunked) and compares.
func runNNCases(t *testing.T, cases []nnCase) {
	d := device(t)
	vb := NewBackendOn(d)
	defer vb.Close()
	cb := cpu.New()
	defer cb.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.runCPU(t, cb)
			got := c.runVulkan(t, vb)
			for _, ch := range c.checks {
				nnCompare(t, ch.name, ch, got[ch.name], want[ch.name])
			}
			if c.post != nil {
				c.post(t, got)
			}
			again := c.runVulkan(t, vb)
			for _, ch := range c.checks {
				nnCompare(t, ch.name+" (repeated)", nnCheck{name: ch.name}, again[ch.name], got[ch.name])
			}
			chunked := NewBackendOn(d)
			defer chunked.Close()
			chunked.maxGroups, chunked.maxChunk = 3, c.chunk
			small := c.runVulkan(t, chunked)
			for _, ch := range c.checks {
				nnCompare(t, ch.name+" (chunked)", ch, small[ch.name], want[ch.name])
			}
			if c.post != nil {
				c.post(t, small)
			}
			if err := chunked.Sync(); err != nil {
				t.Fatal(err)
			}
			// The row-reduction kernels at the workgroup widths of other devices' subgroups.
			for _, w := range []uint32{32, vb.wg} {
				wide := NewBackendOn(d)
				defer wide.Close()
				wide.rowWG = w
				got := c.runVulkan(t, wide)
				for _, ch := range c.checks {
					nnCompare(t, fmt.Sprintf("%s (rows of %d invocations)", ch.name, w), ch, got[ch.name], want[ch.name])
				}
			}
		})
	}
}

func nnRand(r *rand.Rand, n int, scale, shift float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())*scale + shift
	}
	return v
}

func nnTokens(r *rand.Rand, n, V int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.IntN(V))
	}
	return v
}

// nnCutoffs returns LogSoftmaxGather cutoffs for N rows of logits, row i of kind i mod 4: a
// midpoint between two logits (the top few kept), above every logit (only the target kept),
// a midpoint with the target moved below it (kept anyway), and -Inf (all kept); and the
// targets, moved where the kind asks.
func nnCutoffs(r *rand.Rand, logits []float32, tg []int32, N, V, Vp int) ([]float32, []int32) {
	cut := make([]float32, N)
	out := append([]int32(nil), tg...)
	for i := 0; i < N; i++ {
		row := logits[i*Vp : i*Vp+V]
		s := append([]float32(nil), row...)
		sort.Slice(s, func(a, b int) bool { return s[a] > s[b] })
		switch kind := i % 4; {
		case kind == 3:
			cut[i] = float32(math.Inf(-1))
		case kind == 1 || V < 2:
			cut[i] = s[0] + 1
		default:
			k := 1 + r.IntN(min(V-1, 50)) // keep the k largest
			cut[i] = (s[k-1] + s[k]) / 2
			if kind == 2 {
				for j, v := range row {
					if v < cut[i] {
						out[i] = int32(j)
						break
					}
				}
			}
		}
	}
	return cut, out
}

// cpuRun runs f on a fresh CPU backend over host data and returns the named output.
func cpuRun(f map[string][]float32, i map[string][]int32, out string, run func(be tensor.Backend, x map[string]*tensor.Tensor)) []float32 {
	cb := cpu.New()
	defer cb.Close()
	x := map[string]*tensor.Tensor{}
	for name, data := range f {
		x[name], _ = tensor.FromSlice(cb, data, len(data))
	}
	for name, data := range i {
		x[name], _ = tensor.FromInt32(cb, data, len(data))
	}
	run(cb, x)
	v, err := tensor.ToHost(x[out])
	if err != nil {
		panic(err)
	}
	return v
}

// untouchedColumns checks that columns V..Vp-1 of the (N, Vp) result kept their initial values.
func untouchedColumns(name string, init []float32, N, V, Vp int) func(t *testing.T, got map[string][]float32) {
	return func(t *testing.T, got map[string][]float32) {
		t.Helper()
		for r := 0; r < N; r++ {
			for v := V; v < Vp; v++ {
				if g, w := got[name][r*Vp+v], init[r*Vp+v]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%s[%d, %d] (padding) changed from %g to %g", name, r, v, w, g)
				}
			}
		}
	}
}

func nnCases() []nnCase {
	r := rand.New(rand.NewPCG(11, 12))
	var cases []nnCase

	// LayerNorm: C below, above and not a multiple of the workgroup size; N over several
	// blocks of the dweight/dbias partial sums.
	for _, s := range []struct{ N, C int }{{1, 1}, {2, 3}, {5, 64}, {17, 300}, {40, 33}, {300, 20}} {
		N, C := s.N, s.C
		f := map[string][]float32{
			"out": make([]float32, N*C), "mean": make([]float32, N), "rstd": make([]float32, N),
			"inp": nnRand(r, N*C, 2, 0.5), "weight": nnRand(r, C, 1, 0), "bias": nnRand(r, C, 1, 0),
		}
		cases = append(cases, nnCase{
			name: fmt.Sprintf("LayerNormForward/N=%d,C=%d", N, C), f: f,
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.LayerNormForward(x["out"], x["mean"], x["rstd"], x["inp"], x["weight"], x["bias"], N, C)
			},
			// Sums in a different order: a few roundings of values of order 1 (rstd up to 316).
			checks: []nnCheck{{"out", 2e-5, 2e-5}, {"mean", 1e-6, 1e-5}, {"rstd", 0, 2e-5}},
			chunk:  C,
		})
		rr := rand.New(rand.NewPCG(uint64(N), uint64(C))) // its own stream: the cases after keep theirs
		cases = append(cases, nnCase{
			name: fmt.Sprintf("ResidualLayerNormForward/N=%d,C=%d", N, C),
			f: map[string][]float32{
				"residual": nnRand(rr, N*C, 1, 0), "out": make([]float32, N*C), "mean": make([]float32, N), "rstd": make([]float32, N),
				"a": nnRand(rr, N*C, 2, 0.5), "b": nnRand(rr, N*C, 1, 0), "weight": f["weight"], "bias": f["bias"],
			},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.ResidualLayerNormForward(x["residual"], x["out"], x["mean"], x["rstd"], x["a"], x["b"], x["weight"], x["bias"], N, C)
			},
			checks: []nnCheck{{name: "residual"}, {"out", 2e-5, 2e-5}, {"mean", 1e-6, 1e-5}, {"rstd", 0, 2e-5}},
			chunk:  C,
		})
		fwd := func(be tensor.Backend, x map[string]*tensor.Tensor) {
			be.LayerNormForward(x["out"], x["mean"], x["rstd"], x["inp"], x["weight"], x["bias"], N, C)
		}
		mean := cpuRun(f, nil, "mean", fwd)
		rstd := cpuRun(f, nil, "rstd", fwd)
		cases = append(cases, nnCase{
			name: fmt.Sprintf("LayerNormBackward/N=%d,C=%d", N, C),
			f: map[string][]float32{
				"dinp": nnRand(r, N*C, 1, 0), "dweight": nnRand(r, C, 1, 0), "dbias": nnRand(r, C, 1, 0),
				"dout": nnRand(r, N*C, 1, 0), "inp": f["inp"], "weight": f["weight"], "mean": mean, "rstd": rstd,
			},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.LayerNormBackward(x["dinp"], x["dweight"], x["dbias"], x["dout"], x["inp"], x["weight"], x["mean"], x["rstd"], N, C)
				}
			},
			// dinp is a difference of terms scaled by rstd; dweight and dbias sum N rows.
			checks: []nnCheck{{"dinp", 1e-4, 1e-5}, {"dweight", 2e-5 * float64(N), 1e-5}, {"dbias", 2e-6 * float64(N), 1e-5}},
			chunk:  lnBlockRows(N) * C,
		})
	}

	// GELU over every branch of the tanh: the series near 0, the exp form, 1 past 20.
	special := []float32{0, 1e-3, -1e-3, 0.05, -0.05, 0.1, 1, -1, 2.5, -2.5, 5, -5, 10, -10, 30, -30, 100, -100}
	for _, n := range []int{1, 1000, 4099} {
		x := nnRand(r, n, 3, 0)
		copy(x, special[:min(n, len(special))])
		cases = append(cases, nnCase{
			name: fmt.Sprintf("GeluForward/n=%d", n), f: map[string][]float32{"out": make([]float32, n), "inp": x},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) { be.GeluForward(x["out"], x["inp"]) },
			// GLSL's exp is accurate to a few ulps: tanh(u), and so gelu(x)/x, within ~3e-7.
			checks: []nnCheck{{"out", 2e-6, 2e-6}},
			chunk:  1000,
		}, nnCase{
			name: fmt.Sprintf("GeluBackward/n=%d", n),
			f:    map[string][]float32{"dinp": nnRand(r, n, 1, 0), "inp": x, "dout": nnRand(r, n, 1, 0)},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.GeluBackward(x["dinp"], x["inp"], x["dout"])
				be.GeluBackward(x["dinp"], x["inp"], x["dout"])
			},
			checks: []nnCheck{{"dinp", 2e-6, 2e-6}},
			chunk:  1000,
		})
	}

	// Attention: T within one tile, across tiles and not a multiple of them (T=1, 17, 33, 300),
	// head sizes odd, 64 and up to the largest (128, through the wider kernel), several
	// batches and heads, and q, k scaled so that scores reach ±300, where exp without the
	// running maximum overflows. The forward and the backward run together: the saved state
	// (att) differs between backends; the Vulkan one is checked against the log-sum-exp.
	for _, s := range []struct {
		B, T, C, NH int
		qkScale     float32
	}{
		{1, 1, 4, 1, 1}, {2, 5, 12, 3, 1}, {3, 17, 12, 3, 1}, {1, 17, 48, 3, 1}, {2, 17, 6, 1, 1}, {1, 300, 8, 2, 1},
		{2, 33, 128, 2, 1}, {2, 18, 21, 3, 1}, {1, 40, 96, 1, 1}, {1, 20, 128, 1, 1}, {2, 21, 32, 2, 10},
	} {
		B, T, C, NH := s.B, s.T, s.C, s.NH
		qkv := nnRand(r, B*T*3*C, 1, 0)
		for i := range qkv {
			if i%(3*C) < 2*C {
				qkv[i] *= s.qkScale
			}
		}
		name := fmt.Sprintf("B=%d,T=%d,C=%d,NH=%d,qk*%g", B, T, C, NH, s.qkScale)
		cases = append(cases, nnCase{
			name: "Attention/" + name,
			f: map[string][]float32{
				"out": make([]float32, B*T*C), "att": make([]float32, B*NH*T*T), "qkv": qkv,
				"dqkv": nnRand(r, B*T*3*C, 1, 0), "scratch": make([]float32, B*NH*T*T), "dout": nnRand(r, B*T*C, 1, 0),
			},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.AttentionForward(x["out"], x["att"], x["qkv"], B, T, C, NH)
				for range 2 {
					be.AttentionBackward(x["dqkv"], x["scratch"], x["dout"], x["qkv"], x["out"], x["att"], B, T, C, NH)
				}
			},
			// Probability-weighted sums of unit values and sums of up to T such products, in
			// another order: a few roundings, growing with the scores' scale.
			checks: []nnCheck{{"out", 4e-6, 2e-5}, {"dqkv", 2e-5 * float64(s.qkScale), 2e-5 * float64(s.qkScale)}},
			post:   lseMatches(qkv, B, T, C, NH),
			keep:   []string{"att"},
			chunk:  max(NH*T*T, T*3*C), // one sequence per chunk
		})
	}

	// Encoder: vocabularies larger than one window of the chunked run, repeated tokens.
	for _, s := range []struct{ B, T, C, V int }{{1, 1, 1, 1}, {2, 5, 7, 50}, {3, 17, 300, 20}, {2, 17, 3, 4}} {
		B, T, C, V := s.B, s.T, s.C, s.V
		tok := nnTokens(r, B*T, V)
		name := fmt.Sprintf("B=%d,T=%d,C=%d,V=%d", B, T, C, V)
		cases = append(cases, nnCase{
			name: "EncoderForward/" + name,
			f:    map[string][]float32{"out": nnRand(r, B*T*C, 1, 0), "wte": nnRand(r, V*C, 1, 0), "wpe": nnRand(r, T*C, 1, 0)},
			i:    map[string][]int32{"tokens": tok},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.EncoderForward(x["out"], x["tokens"], x["wte"], x["wpe"], B, T, C)
			},
			checks: []nnCheck{{name: "out"}}, // one addition: the same bits
			chunk:  T * C,
		}, nnCase{
			name: "EncoderBackward/" + name,
			f:    map[string][]float32{"dwte": nnRand(r, V*C, 1, 0), "dwpe": nnRand(r, T*C, 1, 0), "dout": nnRand(r, B*T*C, 1, 0)},
			i:    map[string][]int32{"tokens": tok},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.EncoderBackward(x["dwte"], x["dwpe"], x["dout"], x["tokens"], B, T, C)
				}
			},
			checks: []nnCheck{{name: "dwte"}, {name: "dwpe"}}, // positions added in the same order
			chunk:  T * C,
		})
	}

	// Softmax rows: V < Vp, V = Vp, a 1-wide vocabulary and GPT-2's padded vocabulary.
	for _, s := range []struct {
		N, V, Vp int
		temp     float32
	}{{1, 1, 1, 1}, {3, 10, 16, 0.7}, {4, 300, 320, 1}, {2, 777, 777, 2.5}, {2, 50257, 50304, 1}} {
		N, V, Vp, temp := s.N, s.V, s.Vp, s.temp
		name := fmt.Sprintf("N=%d,V=%d,Vp=%d", N, V, Vp)
		tg := nnTokens(r, N, V)
		logits := nnRand(r, N*Vp, 3, 0)
		f := map[string][]float32{"losses": make([]float32, N), "probs": nnRand(r, N*Vp, 1, 0), "logits": logits}
		fwd := func(be tensor.Backend, x map[string]*tensor.Tensor) {
			be.CrossEntropyForward(x["losses"], x["probs"], x["logits"], x["targets"], N, V, Vp)
		}
		cases = append(cases, nnCase{
			name: "CrossEntropyForward/" + name, f: f, i: map[string][]int32{"targets": tg}, run: fwd,
			// The CPU adds the V exponentials in sequence in float32 (as llm.c), which drifts by
			// ~1e-9 V relative (5e-5 at GPT-2's vocabulary); Vulkan sums in a tree. Both shift
			// every probability of a row alike, and the loss by the same amount in absolute.
			checks: []nnCheck{{"probs", 1e-9, 2e-5 + 2e-9*float64(V)}, {"losses", 2e-6 + 2e-9*float64(V), 2e-6}},
			post: func(t *testing.T, got map[string][]float32) {
				for i := 0; i < N; i++ {
					for v := V; v < Vp; v++ {
						if p := got["probs"][i*Vp+v]; p != 0 {
							t.Fatalf("probs[%d, %d] (padding) = %g, want 0", i, v, p)
						}
					}
				}
			},
			chunk: Vp,
		})
		probs := cpuRun(f, map[string][]int32{"targets": tg}, "probs", fwd)
		dlogits := nnRand(r, N*Vp, 1, 0)
		cases = append(cases, nnCase{
			name: "CrossEntropyBackward/" + name,
			f:    map[string][]float32{"dlogits": dlogits, "probs": probs, "dlosses": nnRand(r, N, 1, 0)},
			i:    map[string][]int32{"targets": tg},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.CrossEntropyBackward(x["dlogits"], x["probs"], x["targets"], x["dlosses"], N, V, Vp)
				}
			},
			checks: []nnCheck{{"dlogits", 1e-6, 1e-6}}, // one product and sum per element
			post:   untouchedColumns("dlogits", dlogits, N, V, Vp),
			chunk:  Vp,
		})
		dloss := float32(1) / float32(3*N)
		cases = append(cases, nnCase{
			name: "CrossEntropyFused/" + name,
			f:    map[string][]float32{"losses": make([]float32, N), "dlogits": nnRand(r, N*Vp, 1, 0), "logits": logits},
			i:    map[string][]int32{"targets": tg},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.CrossEntropyFused(x["losses"], x["dlogits"], x["logits"], x["targets"], N, V, Vp, dloss)
			},
			// The probabilities' tolerance, scaled by dloss.
			checks: []nnCheck{{"dlogits", 1e-9, (2e-5 + 2e-9*float64(V)) * float64(dloss)}, {"losses", 2e-6 + 2e-9*float64(V), 2e-6}},
			chunk:  Vp,
		})
		for _, withEnt := range []bool{true, false} {
			ent := map[bool]string{true: "entropy", false: "no entropy"}[withEnt]
			lf := map[string][]float32{"logp": nnRand(r, N, 1, 0), "logits": logits}
			checks := []nnCheck{{"logp", 1e-5, 2e-6}}
			if withEnt {
				lf["entropy"] = nnRand(r, N, 1, 0)
				// float32 sums over V terms against the CPU's float64.
				checks = append(checks, nnCheck{"entropy", 1e-5, 2e-6})
			}
			cases = append(cases, nnCase{
				name: fmt.Sprintf("LogSoftmaxGather/%s,T=%g,%s", name, temp, ent), f: lf,
				i: map[string][]int32{"targets": tg},
				run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
					be.LogSoftmaxGather(x["logp"], x["entropy"], x["logits"], x["targets"], x["cutoff"], N, V, Vp, temp)
				},
				checks: checks, chunk: Vp,
			})
			// The entropy's gradient, dentropy·p·(log p + H), carries the error of H, a
			// float32 sum over V terms on Vulkan (the forward's entropy is checked to 1e-5):
			// up to |dentropy|·p·1e-5 per call, about 4e-6 for a column holding 13% of a
			// row's mass, against the CPU's float64 sums.
			absTol := 1e-6
			if withEnt {
				absTol = 2e-5
			}
			dl := nnRand(r, N*Vp, 1, 0)
			bf := map[string][]float32{"dlogits": dl, "logits": logits, "dlogp": nnRand(r, N, 1, 0)}
			if withEnt {
				bf["dentropy"] = nnRand(r, N, 1, 0)
			}
			cases = append(cases, nnCase{
				name: fmt.Sprintf("LogSoftmaxGatherBackward/%s,T=%g,%s", name, temp, ent), f: bf,
				i: map[string][]int32{"targets": tg},
				run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
					for range 2 {
						be.LogSoftmaxGatherBackward(x["dlogits"], x["logits"], x["targets"], x["cutoff"], x["dlogp"], x["dentropy"], N, V, Vp, temp)
					}
				},
				checks: []nnCheck{{"dlogits", absTol, 1e-5}},
				post:   untouchedColumns("dlogits", dl, N, V, Vp),
				chunk:  Vp,
			})
		}
		// Truncated rows (a replayed top-k/top-p): per-row cutoffs of every kind.
		cut, ctg := nnCutoffs(r, logits, tg, N, V, Vp)
		cases = append(cases, nnCase{
			name: fmt.Sprintf("LogSoftmaxGather/%s,T=%g,cutoff", name, temp),
			f:    map[string][]float32{"logp": nnRand(r, N, 1, 0), "entropy": nnRand(r, N, 1, 0), "logits": logits, "cutoff": cut},
			i:    map[string][]int32{"targets": ctg},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.LogSoftmaxGather(x["logp"], x["entropy"], x["logits"], x["targets"], x["cutoff"], N, V, Vp, temp)
			},
			checks: []nnCheck{{"logp", 1e-5, 2e-6}, {"entropy", 1e-5, 2e-6}},
			chunk:  Vp,
		})
		dl := nnRand(r, N*Vp, 1, 0)
		cases = append(cases, nnCase{
			name: fmt.Sprintf("LogSoftmaxGatherBackward/%s,T=%g,cutoff", name, temp),
			f: map[string][]float32{"dlogits": dl, "logits": logits, "dlogp": nnRand(r, N, 1, 0), "dentropy": nnRand(r, N, 1, 0),
				"cutoff": cut},
			i: map[string][]int32{"targets": ctg},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.LogSoftmaxGatherBackward(x["dlogits"], x["logits"], x["targets"], x["cutoff"], x["dlogp"], x["dentropy"], N, V, Vp, temp)
				}
			},
			checks: []nnCheck{{"dlogits", 1e-6, 1e-5}},
			post: func(t *testing.T, got map[string][]float32) {
				untouchedColumns("dlogits", dl, N, V, Vp)(t, got)
				for i := 0; i < N; i++ {
					for v := 0; v < V; v++ {
						k := i*Vp + v
						if logits[k] < cut[i] && v != int(ctg[i]) && math.Float32bits(got["dlogits"][k]) != math.Float32bits(dl[k]) {
							t.Fatalf("dlogits[%d, %d] (below the cutoff) changed from %g to %g", i, v, dl[k], got["dlogits"][k])
						}
					}
				}
			},
			chunk: Vp,
		})
	}

	// Dropout: masks and outputs bit for bit, element indices across chunks included.
	for _, s := range []struct {
		n    int
		p    float32
		seed uint64
	}{{1, 0.5, 1}, {1000, 0.1, 0xdeadbeef12345678}, {4099, 0.5, 42}, {4099, 0, 7}, {333, 1, 9}} {
		n, p, seed := s.n, s.p, s.seed
		cases = append(cases, nnCase{
			name: fmt.Sprintf("Dropout/n=%d,p=%g", n, p),
			f:    map[string][]float32{"out": make([]float32, n), "mask": make([]float32, n), "inp": nnRand(r, n, 1, 0)},
			run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.Dropout(x["out"], x["mask"], x["inp"], p, seed)
			},
			checks: []nnCheck{{name: "mask"}, {name: "out"}},
			post: func(t *testing.T, got map[string][]float32) {
				for i, m := range got["mask"] {
					if w := tensor.DropoutScale(seed, uint32(i), p); math.Float32bits(m) != math.Float32bits(w) {
						t.Fatalf("mask[%d] = %g, tensor.DropoutScale gives %g", i, m, w)
					}
				}
			},
			chunk: 1000,
		})
	}
	return cases
}

// TestAttentionDecodeMatchesForward decodes a sequence in steps of several sizes through the
// KV cache: each step's output must equal AttentionForward over the whole sequence bit for
// bit (the same kernel over the same keys), the caches must hold exactly the keys and values
// written so far, and the outputs must agree with the CPU backend's decode. Both kinds of
// kernels run.
func TestAttentionDecodeMatchesForward(t *testing.T) {
	d := device(t)
	// Steps of several queries, single queries, and (at T=37) blocks and key tiles crossed
	// mid-step, with head sizes 4 and 64.
	for _, s := range []struct {
		B, T, C, NH, maxT int
		steps             []int
	}{{2, 9, 12, 3, 11, []int{4, 1, 3, 1}}, {2, 37, 128, 2, 40, []int{20, 1, 15, 1}}} {
		for _, kind := range attnKinds {
			for _, limits := range []string{"device", "chunked"} {
				t.Run(fmt.Sprintf("%s/T=%d,C=%d,NH=%d/%s", kind, s.T, s.C, s.NH, limits), func(t *testing.T) {
					forceAttention(t, kind)
					decodeMatchesForward(t, d, s.B, s.T, s.C, s.NH, s.maxT, s.steps, limits == "chunked")
				})
			}
		}
	}
}

func decodeMatchesForward(t *testing.T, d *Device, B, T, C, NH, maxT int, steps []int, chunked bool) {
	r := rand.New(rand.NewPCG(3, 4))
	qkv := nnRand(r, B*T*3*C, 1, 0)
	vb := NewBackendOn(d)
	defer vb.Close()
	if chunked {
		vb.maxGroups, vb.maxChunk = 3, max(NH*T*T, T*3*C, maxT*C) // one sequence per chunk
	}
	cb := cpu.New()
	defer cb.Close()
	full, _ := nnPlace(t, vb, qkv)
	out, _ := nnPlace(t, vb, make([]float32, B*T*C))
	att, _ := nnPlace(t, vb, make([]float32, B*NH*T*T))
	vb.AttentionForward(out, att, full, B, T, C, NH)
	want := download(t, vb, out)

	sentinel := make([]float32, B*maxT*C)
	for i := range sentinel {
		sentinel[i] = nnSentinel
	}
	kc, _ := nnPlace(t, vb, sentinel)
	vc, _ := nnPlace(t, vb, sentinel)
	ckc, _ := tensor.FromSlice(cb, sentinel, len(sentinel))
	cvc, _ := tensor.FromSlice(cb, sentinel, len(sentinel))
	pos := 0
	for _, Tq := range steps {
		step := make([]float32, B*Tq*3*C)
		for b := 0; b < B; b++ {
			copy(step[b*Tq*3*C:(b+1)*Tq*3*C], qkv[(b*T+pos)*3*C:(b*T+pos+Tq)*3*C])
		}
		sq, _ := nnPlace(t, vb, step)
		so, _ := nnPlace(t, vb, make([]float32, B*Tq*C))
		vb.AttentionDecode(so, kc, vc, sq, B, Tq, pos, maxT, C, NH)
		got := download(t, vb, so)

		cq, _ := tensor.FromSlice(cb, step, len(step))
		co, _ := tensor.New(cb, tensor.Float32, B*Tq*C)
		cb.AttentionDecode(co, ckc, cvc, cq, B, Tq, pos, maxT, C, NH)
		cgot, _ := tensor.ToHost(co)
		what := fmt.Sprintf("decode of positions %d..%d", pos, pos+Tq-1)
		nnCompare(t, what+" against the CPU", nnCheck{atol: 2e-6, rtol: 1e-5}, got, cgot)
		for b := 0; b < B; b++ {
			nnCompare(t, fmt.Sprintf("%s, sequence %d, against the forward", what, b), nnCheck{},
				got[b*Tq*C:(b+1)*Tq*C], want[(b*T+pos)*C:(b*T+pos+Tq)*C])
		}
		pos += Tq
	}
	for _, c := range []struct {
		name string
		v, c *tensor.Tensor
	}{{"kcache", kc, ckc}, {"vcache", vc, cvc}} {
		cwant, _ := tensor.ToHost(c.c)
		nnCompare(t, c.name, nnCheck{}, download(t, vb, c.v), cwant) // copies, sentinels past T
	}
}

// TestEncoderBeyondStorageWindow runs the embedding on a table larger than the device's
// maxStorageBufferRange (GPT-2's wte is 154 MB, lavapipe's window 128 MiB), with tokens on both
// sides of the window boundary.
func TestEncoderBeyondStorageWindow(t *testing.T) {
	d := device(t)
	vb := NewBackendOn(d)
	defer vb.Close()
	const C, T = 64, 6
	V := vb.maxChunk/C + 40
	wte, err := tensor.New(vb, tensor.Float32, V, C)
	if err != nil {
		t.Skipf("no room for a %d-element table: %v", V*C, err)
	}
	defer vb.Free(wte.Storage)
	dwte, err := tensor.New(vb, tensor.Float32, V, C)
	if err != nil {
		t.Skipf("no room for a %d-element table: %v", V*C, err)
	}
	defer vb.Free(dwte.Storage)
	r := rand.New(rand.NewPCG(5, 6))
	tokens := []int32{0, int32(V - 1), int32(V - 30), 3, int32(V - 1), int32(V - 41)}
	rows := map[int32][]float32{}
	for _, tok := range tokens {
		if rows[tok] == nil {
			rows[tok] = nnRand(r, C, 1, 0)
			if err := vb.Upload(wte.View(int(tok)*C, C), rows[tok]); err != nil {
				t.Fatal(err)
			}
		}
	}
	wpe := nnRand(r, T*C, 1, 0)
	dout := nnRand(r, T*C, 1, 0)
	tv := nnPlaceInt(t, vb, tokens)
	pv, _ := nnPlace(t, vb, wpe)
	ov, _ := nnPlace(t, vb, make([]float32, T*C))
	dov, _ := nnPlace(t, vb, dout)
	dpv, _ := nnPlace(t, vb, make([]float32, T*C))
	vb.EncoderForward(ov, tv, wte, pv, 1, T, C)
	got := download(t, vb, ov)
	for p, tok := range tokens {
		for c := 0; c < C; c++ {
			if w := rows[tok][c] + wpe[p*C+c]; got[p*C+c] != w {
				t.Fatalf("out[%d, %d] (token %d) = %g, want %g", p, c, tok, got[p*C+c], w)
			}
		}
	}
	vb.EncoderBackward(dwte, dpv, dov, tv, 1, T, C)
	for _, tok := range []int32{0, 3, int32(V - 41), int32(V - 40), int32(V - 30), int32(V - 2), int32(V - 1)} {
		want := make([]float32, C)
		for p, pt := range tokens {
			if pt == tok {
				for c := range want {
					want[c] += dout[p*C+c]
				}
			}
		}
		nnCompare(t, fmt.Sprintf("dwte row %d", tok), nnCheck{}, download(t, vb, dwte.View(int(tok)*C, C)), want)
	}
}

// lseMatches checks the saved state of the Vulkan forward: the log-sum-exp of each query's
// scaled scores, computed here in float64.
func lseMatches(qkv []float32, B, T, C, NH int) func(t *testing.T, got map[string][]float32) {
	return func(t *testing.T, got map[string][]float32) {
		t.Helper()
		hs := C / NH
		scale := float64(attnScale(hs))
		want := make([]float32, B*NH*T)
		for b := range B {
			for h := range NH {
				for tq := range T {
					q := qkv[(b*T+tq)*3*C+h*hs:]
					scores := make([]float64, tq+1)
					m := math.Inf(-1)
					for tk := range scores {
						k := qkv[(b*T+tk)*3*C+C+h*hs:]
						for i := range hs {
							scores[tk] += float64(q[i]) * float64(k[i])
						}
						scores[tk] *= scale
						m = max(m, scores[tk])
					}
					sum := 0.0
					for _, s := range scores {
						sum += math.Exp(s - m)
					}
					want[(b*NH+h)*T+tq] = float32(m + math.Log(sum))
				}
			}
		}
		nnCompare(t, "att (log-sum-exp)", nnCheck{atol: 1e-5, rtol: 1e-5}, got["att"][:B*NH*T], want)
	}
}

// A head larger than the kernels hold is a clear error, not a wrong answer.
func TestAttentionHeadTooLarge(t *testing.T) {
	err := attentionForwardError(t, device(t), 1, 3, 300, 2)
	if err == nil || !strings.Contains(err.Error(), "head size 150") || !strings.Contains(err.Error(), "AttentionForward") {
		t.Fatalf("AttentionForward with 150-wide heads: error %v, want one naming the head size", err)
	}
}
