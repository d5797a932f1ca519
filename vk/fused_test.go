package vk_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// On each backend the fused cross-entropy gives the bits of its forward followed by its
// backward into zeroed dlogits with every row's loss gradient dloss, padded columns 0.
func TestCrossEntropyFusedIsForwardThenBackward(t *testing.T) {
	backends := map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	}
	const N, V, Vp = 7, 1000, 1024
	dloss := float32(1) / float32(N)
	r := rand.New(rand.NewPCG(5, 6))
	logits, targets := make([]float32, N*Vp), make([]int32, N)
	for i := range logits {
		logits[i] = 4 * (r.Float32() - 0.5)
	}
	for i := range targets {
		targets[i] = int32(r.IntN(V))
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			up := func(v []float32) *tensor.Tensor {
				x, err := tensor.FromSlice(be, v, len(v))
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			lg, tg := up(logits), mustInt32(t, be, targets)
			losses1, probs, d1, dl := up(make([]float32, N)), up(make([]float32, N*Vp)), up(make([]float32, N*Vp)), up(make([]float32, N))
			be.Fill(dl, dloss)
			be.CrossEntropyForward(losses1, probs, lg, tg, N, V, Vp)
			be.CrossEntropyBackward(d1, probs, tg, dl, N, V, Vp)
			junk := make([]float32, N*Vp)
			for i := range junk {
				junk[i] = 9
			}
			losses2, d2 := up(make([]float32, N)), up(junk)
			be.CrossEntropyFused(losses2, d2, lg, tg, N, V, Vp, dloss)
			for _, c := range []struct {
				name      string
				want, got *tensor.Tensor
			}{{"losses", losses1, losses2}, {"dlogits", d1, d2}} {
				w, err := tensor.ToHost(c.want)
				if err != nil {
					t.Fatal(err)
				}
				g, err := tensor.ToHost(c.got)
				if err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
						t.Fatalf("%s[%d]: fused %v, forward and backward %v", c.name, i, g[i], w[i])
					}
				}
			}
		})
	}
}

func mustInt32(t *testing.T, be tensor.Backend, v []int32) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromInt32(be, v, len(v))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// On each backend the fused residual layernorm gives the bits of an Add followed by
// LayerNormForward, the residual included.
func TestResidualLayerNormIsAddThenLayerNorm(t *testing.T) {
	backends := map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	}
	const N, C = 37, 200
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * (r.Float32() - 0.5)
		}
		return v
	}
	a, b, w, bias := rnd(N*C, 4), rnd(N*C, 1), rnd(C, 2), rnd(C, 1)
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			up := func(v []float32) *tensor.Tensor {
				x, err := tensor.FromSlice(be, v, len(v))
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			ta, tb, tw, tbias := up(a), up(b), up(w), up(bias)
			res1, out1, mean1, rstd1 := up(make([]float32, N*C)), up(make([]float32, N*C)), up(make([]float32, N)), up(make([]float32, N))
			be.Add(res1, ta, tb)
			be.LayerNormForward(out1, mean1, rstd1, res1, tw, tbias, N, C)
			res2, out2, mean2, rstd2 := up(rnd(N*C, 9)), up(make([]float32, N*C)), up(make([]float32, N)), up(make([]float32, N))
			be.ResidualLayerNormForward(res2, out2, mean2, rstd2, ta, tb, tw, tbias, N, C)
			// In place, as the decoder runs it: residual is a, out is b.
			inA, inB, mean3, rstd3 := up(a), up(b), up(make([]float32, N)), up(make([]float32, N))
			be.ResidualLayerNormForward(inA, inB, mean3, rstd3, inA, inB, tw, tbias, N, C)
			for _, c := range []struct {
				name      string
				want, got *tensor.Tensor
			}{{"residual", res1, res2}, {"out", out1, out2}, {"mean", mean1, mean2}, {"rstd", rstd1, rstd2},
				{"residual in place", res1, inA}, {"out in place", out1, inB}, {"mean in place", mean1, mean3}} {
				w, err := tensor.ToHost(c.want)
				if err != nil {
					t.Fatal(err)
				}
				g, err := tensor.ToHost(c.got)
				if err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
						t.Fatalf("%s[%d]: fused %v, add then layernorm %v", c.name, i, g[i], w[i])
					}
				}
			}
		})
	}
}

// The fused residual RMSNorm gives the bits of an Add followed by RMSNormForward.
func TestResidualRMSNormIsAddThenRMSNorm(t *testing.T) {
	backends := map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	}
	const N, C, eps = 29, 136, 1e-6
	r := rand.New(rand.NewPCG(9, 10))
	rnd := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * (r.Float32() - 0.5)
		}
		return v
	}
	a, b, w := rnd(N*C, 4), rnd(N*C, 1), rnd(C, 2)
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			up := func(v []float32) *tensor.Tensor {
				x, err := tensor.FromSlice(be, v, len(v))
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			ta, tb, tw := up(a), up(b), up(w)
			res1, out1, rstd1 := up(make([]float32, N*C)), up(make([]float32, N*C)), up(make([]float32, N))
			be.Add(res1, ta, tb)
			be.RMSNormForward(out1, rstd1, res1, tw, N, C, eps)
			res2, out2, rstd2 := up(rnd(N*C, 9)), up(make([]float32, N*C)), up(make([]float32, N))
			be.ResidualRMSNormForward(res2, out2, rstd2, ta, tb, tw, N, C, eps)
			inA, inB, rstd3 := up(a), up(b), up(make([]float32, N)) // in place: residual is a, out is b
			be.ResidualRMSNormForward(inA, inB, rstd3, inA, inB, tw, N, C, eps)
			for _, c := range []struct {
				name      string
				want, got *tensor.Tensor
			}{{"residual", res1, res2}, {"out", out1, out2}, {"rstd", rstd1, rstd2},
				{"residual in place", res1, inA}, {"out in place", out1, inB}, {"rstd in place", rstd1, rstd3}} {
				w, _ := tensor.ToHost(c.want)
				g, err := tensor.ToHost(c.got)
				if err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
						t.Fatalf("%s[%d]: fused %v, add then rmsnorm %v", c.name, i, g[i], w[i])
					}
				}
			}
		})
	}
}
