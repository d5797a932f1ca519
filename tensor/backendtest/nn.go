package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// Normals returns n normal values of the given scale and shift, drawn from r: inputs for a
// backend's own cases.
func Normals(r *rand.Rand, n int, scale, shift float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())*scale + shift
	}
	return v
}

// Tokens returns n tokens below V, drawn from r.
func Tokens(r *rand.Rand, n, V int) []int32 {
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

// NNCases are the fused ops of GPT-2 (LayerNorm, GELU, attention, the encoder, cross-entropy,
// log-softmax with truncation, dropout) over shapes that cross workgroup and tile sizes, with
// the tolerances an independent float32 implementation meets.
func NNCases() []Case {
	r := rand.New(rand.NewPCG(11, 12))
	var cases []Case

	// LayerNorm: C below, above and not a multiple of the workgroup size; N over several
	// blocks of the dweight/dbias partial sums.
	for _, s := range []struct{ N, C int }{{1, 1}, {2, 3}, {5, 64}, {17, 300}, {40, 33}, {300, 20}} {
		N, C := s.N, s.C
		f := map[string][]float32{
			"out": make([]float32, N*C), "mean": make([]float32, N), "rstd": make([]float32, N),
			"inp": Normals(r, N*C, 2, 0.5), "weight": Normals(r, C, 1, 0), "bias": Normals(r, C, 1, 0),
		}
		cases = append(cases, Case{
			Name: fmt.Sprintf("LayerNormForward/N=%d,C=%d", N, C), F: f,
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.LayerNormForward(x["out"], x["mean"], x["rstd"], x["inp"], x["weight"], x["bias"], N, C)
			},
			// Sums in a different order: a few roundings of values of order 1 (rstd up to 316).
			Checks: []Check{{"out", 2e-5, 2e-5}, {"mean", 1e-6, 1e-5}, {"rstd", 0, 2e-5}},
			Window: C,
		})
		rr := rand.New(rand.NewPCG(uint64(N), uint64(C))) // its own stream: the cases after keep theirs
		cases = append(cases, Case{
			Name: fmt.Sprintf("ResidualLayerNormForward/N=%d,C=%d", N, C),
			F: map[string][]float32{
				"residual": Normals(rr, N*C, 1, 0), "out": make([]float32, N*C), "mean": make([]float32, N), "rstd": make([]float32, N),
				"a": Normals(rr, N*C, 2, 0.5), "b": Normals(rr, N*C, 1, 0), "weight": f["weight"], "bias": f["bias"],
			},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.ResidualLayerNormForward(x["residual"], x["out"], x["mean"], x["rstd"], x["a"], x["b"], x["weight"], x["bias"], N, C)
			},
			Checks: []Check{{Name: "residual"}, {"out", 2e-5, 2e-5}, {"mean", 1e-6, 1e-5}, {"rstd", 0, 2e-5}},
			Window: C,
		})
		fwd := func(be tensor.Backend, x map[string]*tensor.Tensor) {
			be.LayerNormForward(x["out"], x["mean"], x["rstd"], x["inp"], x["weight"], x["bias"], N, C)
		}
		mean := referenceOutput(f, nil, "mean", fwd)
		rstd := referenceOutput(f, nil, "rstd", fwd)
		cases = append(cases, Case{
			Name: fmt.Sprintf("LayerNormBackward/N=%d,C=%d", N, C),
			F: map[string][]float32{
				"dinp": Normals(r, N*C, 1, 0), "dweight": Normals(r, C, 1, 0), "dbias": Normals(r, C, 1, 0),
				"dout": Normals(r, N*C, 1, 0), "inp": f["inp"], "weight": f["weight"], "mean": mean, "rstd": rstd,
			},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.LayerNormBackward(x["dinp"], x["dweight"], x["dbias"], x["dout"], x["inp"], x["weight"], x["mean"], x["rstd"], N, C)
				}
			},
			// dinp is a difference of terms scaled by rstd; dweight and dbias sum N rows.
			Checks: []Check{{"dinp", 1e-4, 1e-5}, {"dweight", 2e-5 * float64(N), 1e-5}, {"dbias", 2e-6 * float64(N), 1e-5}},
			// Whole blocks of 32 rows: the blocks the column sums are partial sums over.
			Window: 32 * C,
		})
	}

	// GELU over every branch of the tanh: the series near 0, the exp form, 1 past 20.
	special := []float32{0, 1e-3, -1e-3, 0.05, -0.05, 0.1, 1, -1, 2.5, -2.5, 5, -5, 10, -10, 30, -30, 100, -100}
	for _, n := range []int{1, 1000, 4099} {
		x := Normals(r, n, 3, 0)
		copy(x, special[:min(n, len(special))])
		cases = append(cases, Case{
			Name: fmt.Sprintf("GeluForward/n=%d", n), F: map[string][]float32{"out": make([]float32, n), "inp": x},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) { be.GeluForward(x["out"], x["inp"]) },
			// A GPU's exp (GLSL's) is accurate to a few ulps: tanh(u), and so gelu(x)/x, within ~3e-7.
			Checks: []Check{{"out", 2e-6, 2e-6}},
			Window: 1000,
		}, Case{
			Name: fmt.Sprintf("GeluBackward/n=%d", n),
			F:    map[string][]float32{"dinp": Normals(r, n, 1, 0), "inp": x, "dout": Normals(r, n, 1, 0)},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.GeluBackward(x["dinp"], x["inp"], x["dout"])
				be.GeluBackward(x["dinp"], x["inp"], x["dout"])
			},
			Checks: []Check{{"dinp", 2e-6, 2e-6}},
			Window: 1000,
		})
	}

	// Attention: T within one tile, across tiles and not a multiple of them (T=1, 17, 33, 300),
	// head sizes odd, 64 and up to the largest (128, through the wider kernel), several
	// batches and heads, and q, k scaled so that scores reach ±300, where exp without the
	// running maximum overflows. The forward and the backward run together: the saved state
	// (att) is in each backend's own layout and is not compared.
	for _, s := range []struct {
		B, T, C, NH int
		qkScale     float32
	}{
		{1, 1, 4, 1, 1}, {2, 5, 12, 3, 1}, {3, 17, 12, 3, 1}, {1, 17, 48, 3, 1}, {2, 17, 6, 1, 1}, {1, 300, 8, 2, 1},
		{2, 33, 128, 2, 1}, {2, 18, 21, 3, 1}, {1, 40, 96, 1, 1}, {1, 20, 128, 1, 1}, {2, 21, 32, 2, 10},
	} {
		B, T, C, NH := s.B, s.T, s.C, s.NH
		qkv := Normals(r, B*T*3*C, 1, 0)
		for i := range qkv {
			if i%(3*C) < 2*C {
				qkv[i] *= s.qkScale
			}
		}
		name := fmt.Sprintf("B=%d,T=%d,C=%d,NH=%d,qk*%g", B, T, C, NH, s.qkScale)
		cases = append(cases, Case{
			Name: "Attention/" + name,
			F: map[string][]float32{
				"out": make([]float32, B*T*C), "att": make([]float32, B*NH*T*T), "qkv": qkv,
				"dqkv": Normals(r, B*T*3*C, 1, 0), "scratch": make([]float32, B*NH*T*T), "dout": Normals(r, B*T*C, 1, 0),
			},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.AttentionForward(x["out"], x["att"], x["qkv"], B, T, C, NH)
				for range 2 {
					be.AttentionBackward(x["dqkv"], x["scratch"], x["dout"], x["qkv"], x["out"], x["att"], B, T, C, NH)
				}
			},
			// Probability-weighted sums of unit values and sums of up to T such products, in
			// another order: a few roundings, growing with the scores' scale (an exponential's
			// relative error grows with its argument; NVIDIA's exp differed by 5e-6 at qk*10).
			Checks: []Check{{"out", 4e-6 * float64(s.qkScale), 2e-5}, {"dqkv", 2e-5 * float64(s.qkScale), 2e-5 * float64(s.qkScale)}},
			Dims:   map[string]int{"B": B, "T": T, "C": C, "NH": NH},
			Window: max(NH*T*T, T*3*C), // one sequence per chunk
		})
	}

	// Encoder: vocabularies larger than one window of the chunked run, repeated tokens.
	for _, s := range []struct{ B, T, C, V int }{{1, 1, 1, 1}, {2, 5, 7, 50}, {3, 17, 300, 20}, {2, 17, 3, 4}} {
		B, T, C, V := s.B, s.T, s.C, s.V
		tok := Tokens(r, B*T, V)
		name := fmt.Sprintf("B=%d,T=%d,C=%d,V=%d", B, T, C, V)
		cases = append(cases, Case{
			Name: "EncoderForward/" + name,
			F:    map[string][]float32{"out": Normals(r, B*T*C, 1, 0), "wte": Normals(r, V*C, 1, 0), "wpe": Normals(r, T*C, 1, 0)},
			I:    map[string][]int32{"tokens": tok},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.EncoderForward(x["out"], x["tokens"], x["wte"], x["wpe"], B, T, C)
			},
			Checks: []Check{{Name: "out"}}, // one addition: the same bits
			Window: T * C,
		}, Case{
			Name: "EncoderBackward/" + name,
			F:    map[string][]float32{"dwte": Normals(r, V*C, 1, 0), "dwpe": Normals(r, T*C, 1, 0), "dout": Normals(r, B*T*C, 1, 0)},
			I:    map[string][]int32{"tokens": tok},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.EncoderBackward(x["dwte"], x["dwpe"], x["dout"], x["tokens"], B, T, C)
				}
			},
			Checks: []Check{{Name: "dwte"}, {Name: "dwpe"}}, // positions added in the same order
			Window: T * C,
		})
	}

	// Softmax rows: V < Vp, V = Vp, a 1-wide vocabulary and GPT-2's padded vocabulary.
	for _, s := range []struct {
		N, V, Vp int
		temp     float32
	}{{1, 1, 1, 1}, {3, 10, 16, 0.7}, {4, 300, 320, 1}, {2, 777, 777, 2.5}, {2, 50257, 50304, 1}} {
		N, V, Vp, temp := s.N, s.V, s.Vp, s.temp
		name := fmt.Sprintf("N=%d,V=%d,Vp=%d", N, V, Vp)
		tg := Tokens(r, N, V)
		logits := Normals(r, N*Vp, 3, 0)
		f := map[string][]float32{"losses": make([]float32, N), "probs": Normals(r, N*Vp, 1, 0), "logits": logits}
		fwd := func(be tensor.Backend, x map[string]*tensor.Tensor) {
			be.CrossEntropyForward(x["losses"], x["probs"], x["logits"], x["targets"], N, V, Vp)
		}
		cases = append(cases, Case{
			Name: "CrossEntropyForward/" + name, F: f, I: map[string][]int32{"targets": tg}, Run: fwd,
			// The CPU adds the V exponentials in sequence in float32 (as llm.c), which drifts by
			// ~1e-9 V relative (5e-5 at GPT-2's vocabulary); a GPU sums in a tree. Both shift
			// every probability of a row alike, and the loss by the same amount in absolute.
			Checks: []Check{{"probs", 1e-9, 2e-5 + 2e-9*float64(V)}, {"losses", 2e-6 + 2e-9*float64(V), 2e-6}},
			Post: func(t *testing.T, got map[string][]float32) {
				for i := 0; i < N; i++ {
					for v := V; v < Vp; v++ {
						if p := got["probs"][i*Vp+v]; p != 0 {
							t.Fatalf("probs[%d, %d] (padding) = %g, want 0", i, v, p)
						}
					}
				}
			},
			Window: Vp,
		})
		probs := referenceOutput(f, map[string][]int32{"targets": tg}, "probs", fwd)
		dlogits := Normals(r, N*Vp, 1, 0)
		cases = append(cases, Case{
			Name: "CrossEntropyBackward/" + name,
			F:    map[string][]float32{"dlogits": dlogits, "probs": probs, "dlosses": Normals(r, N, 1, 0)},
			I:    map[string][]int32{"targets": tg},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.CrossEntropyBackward(x["dlogits"], x["probs"], x["targets"], x["dlosses"], N, V, Vp)
				}
			},
			Checks: []Check{{"dlogits", 1e-6, 1e-6}}, // one product and sum per element
			Post:   untouchedColumns("dlogits", dlogits, N, V, Vp),
			Window: Vp,
		})
		dloss := float32(1) / float32(3*N)
		cases = append(cases, Case{
			Name: "CrossEntropyFused/" + name,
			F:    map[string][]float32{"losses": make([]float32, N), "dlogits": Normals(r, N*Vp, 1, 0), "logits": logits},
			I:    map[string][]int32{"targets": tg},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.CrossEntropyFused(x["losses"], x["dlogits"], x["logits"], x["targets"], N, V, Vp, dloss)
			},
			// The probabilities' tolerance, scaled by dloss.
			Checks: []Check{{"dlogits", 1e-9, (2e-5 + 2e-9*float64(V)) * float64(dloss)}, {"losses", 2e-6 + 2e-9*float64(V), 2e-6}},
			Window: Vp,
		})
		for _, withEnt := range []bool{true, false} {
			ent := map[bool]string{true: "entropy", false: "no entropy"}[withEnt]
			lf := map[string][]float32{"logp": Normals(r, N, 1, 0), "logits": logits}
			checks := []Check{{"logp", 1e-5, 2e-6}}
			if withEnt {
				lf["entropy"] = Normals(r, N, 1, 0)
				// float32 sums over V terms against the CPU's float64.
				checks = append(checks, Check{"entropy", 1e-5, 2e-6})
			}
			cases = append(cases, Case{
				Name: fmt.Sprintf("LogSoftmaxGather/%s,T=%g,%s", name, temp, ent), F: lf,
				I: map[string][]int32{"targets": tg},
				Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
					be.LogSoftmaxGather(x["logp"], x["entropy"], x["logits"], x["targets"], x["cutoff"], N, V, Vp, temp)
				},
				Checks: checks, Window: Vp,
			})
			// The entropy's gradient, dentropy·p·(log p + H), carries the error of H, a
			// float32 sum over V terms on a GPU (the forward's entropy is checked to 1e-5):
			// up to |dentropy|·p·1e-5 per call, about 4e-6 for a column holding 13% of a
			// row's mass, against the CPU's float64 sums.
			absTol := 1e-6
			if withEnt {
				absTol = 2e-5
			}
			dl := Normals(r, N*Vp, 1, 0)
			bf := map[string][]float32{"dlogits": dl, "logits": logits, "dlogp": Normals(r, N, 1, 0)}
			if withEnt {
				bf["dentropy"] = Normals(r, N, 1, 0)
			}
			cases = append(cases, Case{
				Name: fmt.Sprintf("LogSoftmaxGatherBackward/%s,T=%g,%s", name, temp, ent), F: bf,
				I: map[string][]int32{"targets": tg},
				Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
					for range 2 {
						be.LogSoftmaxGatherBackward(x["dlogits"], x["logits"], x["targets"], x["cutoff"], x["dlogp"], x["dentropy"], N, V, Vp, temp)
					}
				},
				Checks: []Check{{"dlogits", absTol, 1e-5}},
				Post:   untouchedColumns("dlogits", dl, N, V, Vp),
				Window: Vp,
			})
		}
		// Truncated rows (a replayed top-k/top-p): per-row cutoffs of every kind.
		cut, ctg := nnCutoffs(r, logits, tg, N, V, Vp)
		cases = append(cases, Case{
			Name: fmt.Sprintf("LogSoftmaxGather/%s,T=%g,cutoff", name, temp),
			F:    map[string][]float32{"logp": Normals(r, N, 1, 0), "entropy": Normals(r, N, 1, 0), "logits": logits, "cutoff": cut},
			I:    map[string][]int32{"targets": ctg},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.LogSoftmaxGather(x["logp"], x["entropy"], x["logits"], x["targets"], x["cutoff"], N, V, Vp, temp)
			},
			Checks: []Check{{"logp", 1e-5, 2e-6}, {"entropy", 1e-5, 2e-6}},
			Window: Vp,
		})
		dl := Normals(r, N*Vp, 1, 0)
		cases = append(cases, Case{
			Name: fmt.Sprintf("LogSoftmaxGatherBackward/%s,T=%g,cutoff", name, temp),
			F: map[string][]float32{"dlogits": dl, "logits": logits, "dlogp": Normals(r, N, 1, 0), "dentropy": Normals(r, N, 1, 0),
				"cutoff": cut},
			I: map[string][]int32{"targets": ctg},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				for range 2 {
					be.LogSoftmaxGatherBackward(x["dlogits"], x["logits"], x["targets"], x["cutoff"], x["dlogp"], x["dentropy"], N, V, Vp, temp)
				}
			},
			Checks: []Check{{"dlogits", 1e-6, 1e-5}},
			Post: func(t *testing.T, got map[string][]float32) {
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
			Window: Vp,
		})
	}

	// Dropout: masks and outputs bit for bit, element indices across chunks included.
	for _, s := range []struct {
		n    int
		p    float32
		seed uint64
	}{{1, 0.5, 1}, {1000, 0.1, 0xdeadbeef12345678}, {4099, 0.5, 42}, {4099, 0, 7}, {333, 1, 9}} {
		n, p, seed := s.n, s.p, s.seed
		cases = append(cases, Case{
			Name: fmt.Sprintf("Dropout/n=%d,p=%g", n, p),
			F:    map[string][]float32{"out": make([]float32, n), "mask": make([]float32, n), "inp": Normals(r, n, 1, 0)},
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				be.Dropout(x["out"], x["mask"], x["inp"], p, seed)
			},
			Checks: []Check{{Name: "mask"}, {Name: "out"}},
			Post: func(t *testing.T, got map[string][]float32) {
				for i, m := range got["mask"] {
					if w := tensor.DropoutScale(seed, uint32(i), p); math.Float32bits(m) != math.Float32bits(w) {
						t.Fatalf("mask[%d] = %g, tensor.DropoutScale gives %g", i, m, w)
					}
				}
			},
			Window: 1000,
		})
	}
	return append(cases, decodeCases()...)
}

// decodeCases decode sequences through a KV cache in steps of several sizes: single queries,
// several, and (at T=37) steps that cross a backend's blocks of positions, with head sizes 4
// and 64. Each step's output is compared with the reference's, and the caches bit for bit:
// the new keys and values are copies, and positions past the last step keep their values.
func decodeCases() []Case {
	r := rand.New(rand.NewPCG(3, 4))
	var cases []Case
	for _, s := range []struct {
		B, T, C, NH, maxT int
		steps             []int
	}{{2, 9, 12, 3, 11, []int{4, 1, 3, 1}}, {2, 37, 128, 2, 40, []int{20, 1, 15, 1}}} {
		B, C, NH, maxT, steps := s.B, s.C, s.NH, s.maxT, s.steps
		f := map[string][]float32{"kcache": Normals(r, B*maxT*C, 1, 0), "vcache": Normals(r, B*maxT*C, 1, 0)}
		checks := []Check{{Name: "kcache"}, {Name: "vcache"}}
		for i, Tq := range steps {
			f[fmt.Sprint("qkv", i)] = Normals(r, B*Tq*3*C, 1, 0)
			f[fmt.Sprint("out", i)] = make([]float32, B*Tq*C)
			// Probability-weighted sums of unit values, in another order.
			checks = append(checks, Check{fmt.Sprint("out", i), 2e-6, 1e-5})
		}
		cases = append(cases, Case{
			Name: fmt.Sprintf("AttentionDecode/B=%d,T=%d,C=%d,NH=%d,maxT=%d", B, s.T, C, NH, maxT), F: f,
			Run: func(be tensor.Backend, x map[string]*tensor.Tensor) {
				pos := 0
				for i, Tq := range steps {
					be.AttentionDecode(x[fmt.Sprint("out", i)], x["kcache"], x["vcache"], x[fmt.Sprint("qkv", i)], B, Tq, pos, maxT, C, NH)
					pos += Tq
				}
			},
			Checks: checks,
			Window: max(NH*s.T*s.T, s.T*3*C, maxT*C), // one sequence per window
		})
	}
	return cases
}
