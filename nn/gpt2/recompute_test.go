package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// recomputeCfg has three layers, so a layer's shared values are rewritten by the layers on
// both sides of it.
var recomputeCfg = gpt2.Config{NumLayers: 3, NumHeads: 3, Channels: 24, MaxSeqLen: 12, VocabSize: 29, PaddedVocabSize: 32}

const recomputeB, recomputeT = 2, 9

// recomputeBackends runs check on the CPU and, when there is a device, on Vulkan.
func recomputeBackends(t *testing.T, check func(t *testing.T, be tensor.Backend)) {
	t.Run("cpu", func(t *testing.T) { check(t, cpu.New()) })
	t.Run("vulkan", func(t *testing.T) { check(t, testutil.Vulkan(t)) })
}

func recomputeModel(t *testing.T, be tensor.Backend) *gpt2.Model {
	t.Helper()
	return gradModel(t, be, recomputeCfg, 11)
}

// gradModel is a GPT-2 of cfg on be with random weights from seed and gradients enabled.
func gradModel(t *testing.T, be tensor.Backend, cfg gpt2.Config, seed uint64) *gpt2.Model {
	t.Helper()
	m, err := gpt2.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(seed); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	return m
}

func recomputeTokens(seed uint64) (inputs, targets []int32) {
	r := rng.New(seed)
	n := recomputeB * recomputeT
	inputs, targets = make([]int32, n), make([]int32, n)
	for i := range inputs {
		inputs[i], targets[i] = int32(r.Intn(recomputeCfg.VocabSize)), int32(r.Intn(recomputeCfg.VocabSize))
	}
	return inputs, targets
}

// trainSteps takes one AdamW step per entry of recompute (Model.Recompute during that step) on a
// fresh model and returns each step's loss bits, gradients and the parameters after it.
func trainSteps(t *testing.T, be tensor.Backend, recompute []bool) (losses []uint32, grads, params [][]float32) {
	t.Helper()
	m := recomputeModel(t, be)
	opt, err := optim.NewAdamW(m.Params, optim.AdamWConfig{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for step, on := range recompute {
		m.Recompute = on
		inputs, targets := recomputeTokens(uint64(step + 1))
		m.ZeroGrad()
		tp := autograd.NewTape()
		loss, err := m.ForwardLoss(tp, inputs, targets, recomputeB, recomputeT)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		g, err := m.GradsToHost()
		if err != nil {
			t.Fatal(err)
		}
		opt.Update(m.Params, m.Grads, 3e-3)
		p, err := m.ParamsToHost()
		if err != nil {
			t.Fatal(err)
		}
		losses, grads, params = append(losses, math.Float32bits(loss)), append(grads, g), append(params, p)
	}
	return losses, grads, params
}

// Training with Recompute gives the same loss, gradients and AdamW steps, bit for bit, as
// without; so does a model that switches it on and off between steps.
func TestRecomputeTrainsBitwiseEqual(t *testing.T) {
	recomputeBackends(t, func(t *testing.T, be tensor.Backend) {
		wantLoss, wantGrads, wantParams := trainSteps(t, be, []bool{false, false, false, false})
		for _, schedule := range [][]bool{{true, true, true, true}, {true, false, true, false}} {
			losses, grads, params := trainSteps(t, be, schedule)
			for s := range schedule {
				if losses[s] != wantLoss[s] {
					t.Fatalf("recompute %v, step %d: loss %v, want %v", schedule, s+1, math.Float32frombits(losses[s]), math.Float32frombits(wantLoss[s]))
				}
				bitwiseEqual(t, "gradients", grads[s], wantGrads[s])
				bitwiseEqual(t, "parameters after AdamW", params[s], wantParams[s])
			}
		}
		if wantLoss[0] == wantLoss[3] {
			t.Fatalf("four steps left the loss at %v: the comparison saw no training", math.Float32frombits(wantLoss[0]))
		}
		var norm float64
		for _, g := range wantGrads[0] {
			norm += float64(g) * float64(g)
		}
		if !(norm > 1e-6) {
			t.Fatalf("gradient norm² %v: the comparison saw no gradient", norm)
		}
	})
}

// The RL path, ForwardTrunk and a SelectedHead seeded on both outputs, back-propagates the same
// bits with Recompute.
func TestRecomputeSelectedHeadBitwiseEqual(t *testing.T) {
	recomputeBackends(t, func(t *testing.T, be tensor.Backend) {
		want := selectedGrads(t, be, false)
		bitwiseEqual(t, "gradients", selectedGrads(t, be, true), want)
	})
}

func selectedGrads(t *testing.T, be tensor.Backend, recompute bool) []float32 {
	t.Helper()
	m := recomputeModel(t, be)
	m.Recompute = recompute
	inputs, targets := recomputeTokens(7)
	n := recomputeB * recomputeT
	positions, seedLogp, seedEnt := make([]int, n), make([]float32, n), make([]float32, n)
	r := rng.New(3)
	for k := range positions {
		positions[k] = (k * 5) % n
		seedLogp[k], seedEnt[k] = float32(r.Normal()), float32(r.Normal())
	}
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, inputs, recomputeB, recomputeT); err != nil {
		t.Fatal(err)
	}
	head := m.NewSelectedHead()
	defer head.Free()
	lp, ent, err := head.Forward(tp, positions, targets, nil, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	m.ZeroTrunkGrads()
	if err := be.Upload(lp.Grad, seedLogp); err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(ent.Grad, seedEnt); err != nil {
		t.Fatal(err)
	}
	tp.Backward()
	g, err := m.GradsToHost()
	if err != nil {
		t.Fatal(err)
	}
	return g
}
