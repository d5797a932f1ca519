package vk_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// onBothBackends runs f on the CPU and on Vulkan (skipped without a device unless
// VKGRAD_REQUIRE_VULKAN=1), with up uploading host values to the backend.
func onBothBackends(t *testing.T, f func(t *testing.T, be tensor.Backend, up func([]float32) *tensor.Tensor)) {
	backends := map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			f(t, be, func(v []float32) *tensor.Tensor {
				x, err := tensor.FromSlice(be, v, len(v))
				if err != nil {
					t.Fatal(err)
				}
				return x
			})
		})
	}
}

// sameBits fails unless each pair's got holds want's bits, naming the pair (the fused op
// against the ops it fuses).
func sameBits(t *testing.T, pairs map[string][2]*tensor.Tensor) {
	t.Helper()
	for name, p := range pairs {
		want, err := tensor.ToHost(p[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := tensor.ToHost(p[1])
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("%s[%d]: fused %v, unfused %v", name, i, got[i], want[i])
			}
		}
	}
}

// uniform draws n values in [-scale/2, scale/2).
func uniform(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * (r.Float32() - 0.5)
	}
	return v
}

// On each backend the fused cross-entropy gives the bits of its forward followed by its
// backward into zeroed dlogits with every row's loss gradient dloss, padded columns 0.
func TestCrossEntropyFusedIsForwardThenBackward(t *testing.T) {
	const N, V, Vp = 7, 1000, 1024
	dloss := float32(1) / float32(N)
	r := rand.New(rand.NewPCG(5, 6))
	logits, targets := uniform(r, N*Vp, 8), make([]int32, N)
	for i := range targets {
		targets[i] = int32(r.IntN(V))
	}
	onBothBackends(t, func(t *testing.T, be tensor.Backend, up func([]float32) *tensor.Tensor) {
		tg, err := tensor.FromInt32(be, targets, N)
		if err != nil {
			t.Fatal(err)
		}
		lg := up(logits)
		losses1, probs, d1, dl := up(make([]float32, N)), up(make([]float32, N*Vp)), up(make([]float32, N*Vp)), up(make([]float32, N))
		be.Fill(dl, dloss)
		be.CrossEntropyForward(losses1, probs, lg, tg, N, V, Vp)
		be.CrossEntropyBackward(d1, probs, tg, dl, N, V, Vp)
		losses2, d2 := up(make([]float32, N)), up(uniform(r, N*Vp, 18)) // dlogits are written, not added
		be.CrossEntropyFused(losses2, d2, lg, tg, N, V, Vp, dloss)
		sameBits(t, map[string][2]*tensor.Tensor{"losses": {losses1, losses2}, "dlogits": {d1, d2}})
	})
}

// On each backend the fused residual layernorm gives the bits of an Add followed by
// LayerNormForward, also in place as the decoder runs it (residual is a, out is b).
func TestResidualLayerNormIsAddThenLayerNorm(t *testing.T) {
	const N, C = 37, 200
	r := rand.New(rand.NewPCG(7, 8))
	a, b, w, bias := uniform(r, N*C, 4), uniform(r, N*C, 1), uniform(r, C, 2), uniform(r, C, 1)
	onBothBackends(t, func(t *testing.T, be tensor.Backend, up func([]float32) *tensor.Tensor) {
		ta, tb, tw, tbias := up(a), up(b), up(w), up(bias)
		res1, out1, mean1, rstd1 := up(make([]float32, N*C)), up(make([]float32, N*C)), up(make([]float32, N)), up(make([]float32, N))
		be.Add(res1, ta, tb)
		be.LayerNormForward(out1, mean1, rstd1, res1, tw, tbias, N, C)
		res2, out2, mean2, rstd2 := up(uniform(r, N*C, 18)), up(make([]float32, N*C)), up(make([]float32, N)), up(make([]float32, N))
		be.ResidualLayerNormForward(res2, out2, mean2, rstd2, ta, tb, tw, tbias, N, C)
		inA, inB, mean3, rstd3 := up(a), up(b), up(make([]float32, N)), up(make([]float32, N))
		be.ResidualLayerNormForward(inA, inB, mean3, rstd3, inA, inB, tw, tbias, N, C)
		sameBits(t, map[string][2]*tensor.Tensor{
			"residual": {res1, res2}, "out": {out1, out2}, "mean": {mean1, mean2}, "rstd": {rstd1, rstd2},
			"residual in place": {res1, inA}, "out in place": {out1, inB}, "mean in place": {mean1, mean3}, "rstd in place": {rstd1, rstd3},
		})
	})
}

// The fused residual RMSNorm gives the bits of an Add followed by RMSNormForward, also in place.
func TestResidualRMSNormIsAddThenRMSNorm(t *testing.T) {
	const N, C, eps = 29, 136, 1e-6
	r := rand.New(rand.NewPCG(9, 10))
	a, b, w := uniform(r, N*C, 4), uniform(r, N*C, 1), uniform(r, C, 2)
	onBothBackends(t, func(t *testing.T, be tensor.Backend, up func([]float32) *tensor.Tensor) {
		ta, tb, tw := up(a), up(b), up(w)
		res1, out1, rstd1 := up(make([]float32, N*C)), up(make([]float32, N*C)), up(make([]float32, N))
		be.Add(res1, ta, tb)
		be.RMSNormForward(out1, rstd1, res1, tw, N, C, eps)
		res2, out2, rstd2 := up(uniform(r, N*C, 18)), up(make([]float32, N*C)), up(make([]float32, N))
		be.ResidualRMSNormForward(res2, out2, rstd2, ta, tb, tw, N, C, eps)
		inA, inB, rstd3 := up(a), up(b), up(make([]float32, N))
		be.ResidualRMSNormForward(inA, inB, rstd3, inA, inB, tw, N, C, eps)
		sameBits(t, map[string][2]*tensor.Tensor{
			"residual": {res1, res2}, "out": {out1, out2}, "rstd": {rstd1, rstd2},
			"residual in place": {res1, inA}, "out in place": {out1, inB}, "rstd in place": {rstd1, rstd3},
		})
	})
}
