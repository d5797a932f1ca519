package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// headRun is what one SelectedHead pass gave: log-probs, entropies and every parameter's
// gradient after seeding both outputs.
type headRun struct{ logp, entropy, grads []float32 }

// runSelected runs the selected head over every position of a batch with chunks of rows rows
// (0: the default, one chunk here), under a limited vocabulary and a truncation, and
// back-propagates seeds into both outputs.
func runSelected(t *testing.T, be tensor.Backend, rows int) headRun {
	t.Helper()
	m := gradModel(t, be, tapeCfg, 5)
	V := tapeCfg.VocabSize - 3
	if err := m.LimitVocab(V); err != nil {
		t.Fatal(err)
	}
	m.HeadChunkRows = rows
	inputs, _ := tapeTokens()
	n := tapeB * tapeT
	r := rng.New(17)
	positions, targets, cutoffs := make([]int, n), make([]int32, n), make([]float32, n)
	seedLogp, seedEnt := make([]float32, n), make([]float32, n)
	for k := range positions {
		positions[k] = (k * 5) % n // out of order, so rows are gathered in runs of one
		targets[k] = int32(r.Intn(V))
		cutoffs[k] = float32(math.Inf(-1))
		if k%3 == 0 {
			cutoffs[k] = float32(r.Normal() * 0.05)
		}
		seedLogp[k], seedEnt[k] = float32(r.Normal()), float32(r.Normal())
	}
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	head := m.NewSelectedHead()
	defer head.Free()
	lp, ent, err := head.Forward(tp, positions, targets, cutoffs, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	var out headRun
	if out.logp, err = tensor.ToHost(lp.Value); err != nil {
		t.Fatal(err)
	}
	if out.entropy, err = tensor.ToHost(ent.Value); err != nil {
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
	if out.grads, err = m.GradsToHost(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The selected head computed a few rows at a time gives the log-probs, entropies and
// gradients of every parameter of the head computed in one piece, within float32 rounding
// (only the order in which wte's gradient adds the chunks differs).
func TestSelectedHeadChunksMatchWhole(t *testing.T) {
	for name, be := range map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	} {
		t.Run(name, func(t *testing.T) {
			whole := runSelected(t, be(t), 0)
			for _, rows := range []int{1, 3, 5} {
				got := runSelected(t, be(t), rows)
				closeTo(t, "logp", rows, got.logp, whole.logp, 1e-5)
				closeTo(t, "entropy", rows, got.entropy, whole.entropy, 1e-5)
				closeTo(t, "parameter gradients", rows, got.grads, whole.grads, 1e-4)
			}
		})
	}
}

// closeTo fails when got and want differ by more than tol relative to the larger of 1e-2 and
// want's magnitude.
func closeTo(t *testing.T, what string, rows int, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s with chunks of %d rows: %d values, want %d", what, rows, len(got), len(want))
	}
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		if d > tol*math.Max(1e-2, math.Abs(float64(want[i]))) || d != d {
			t.Fatalf("%s with chunks of %d rows: [%d] = %v, in one chunk %v", what, rows, i, got[i], want[i])
		}
	}
}

// Two models sharing activations take turns with one set: the second model's forward
// allocates nothing, gives the same log-probs as a model with its own, and the first takes
// them back for a recorded pass.
func TestShareActivations(t *testing.T) {
	be := &liveBytes{Backend: cpu.New()}
	newModel := func() *gpt2.Model {
		m, err := gpt2.New(be, tapeCfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.InitRandom(5); err != nil {
			t.Fatal(err)
		}
		return m
	}
	policy, ref, alone := newModel(), newModel(), newModel()
	if err := policy.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	policy.ActsWithGrads = true
	if err := ref.ShareActivations(policy); err != nil {
		t.Fatal(err)
	}
	if err := ref.ShareActivations(ref); err == nil {
		t.Fatal("a model shared activations with itself")
	}
	inputs, targets := tapeTokens()
	positions := []int{1, 2, 3, 9}
	sel := []int32{targets[1], targets[2], targets[3], targets[9]}
	logps := func(m *gpt2.Model, tp *autograd.Tape) []float32 {
		t.Helper()
		if err := m.ForwardTrunk(tp, inputs, tapeB, tapeT); err != nil {
			t.Fatal(err)
		}
		lp, _, err := m.NewSelectedHead().Forward(tp, positions, sel, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tensor.ToHost(lp.Value)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	start := be.live
	logps(policy, nil)
	first := be.live - start // the activations, with their gradients, and a head
	before := be.live
	if err := ref.ForwardTrunk(nil, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	if be.live != before {
		t.Fatalf("the sharing model's forward allocated %d bytes, want none", be.live-before)
	}
	bitwiseEqual(t, "log-probs of a model on shared activations", logps(ref, nil), logps(alone, nil))
	before = be.live
	tp := autograd.NewTape()
	logps(policy, tp)
	if be.live-before > first/4 { // a new head only
		t.Fatalf("the policy's recorded forward allocated %d bytes: its activations were laid out again", be.live-before)
	}
}

// TrunkActivationBytes and SelectedHeadBytes are what ForwardTrunk and a recording
// SelectedHead allocate, and the head's share has no term of positions × vocabulary: past one
// chunk, more positions add only their own rows.
func TestSelectedFootprintMatchesAllocations(t *testing.T) {
	be := &liveBytes{Backend: cpu.New()}
	cfg := gpt2.Config{NumLayers: 1, NumHeads: 2, Channels: 8, MaxSeqLen: 12, VocabSize: 2000, PaddedVocabSize: 2048}
	m, err := gpt2.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	m.HeadChunkRows = 4
	inputs, targets := tapeTokens()
	before := be.live
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	want, err := gpt2.TrunkActivationBytes(be, cfg, tapeB, tapeT, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(be.live - before); got != want {
		t.Fatalf("ForwardTrunk allocated %d bytes, TrunkActivationBytes says %d", got, want)
	}
	n := tapeB * tapeT
	positions := make([]int, n)
	for k := range positions {
		positions[k] = k
	}
	before = be.live
	if _, _, err := m.NewSelectedHead().Forward(tp, positions, targets, targets2cut(n), 1); err != nil {
		t.Fatal(err)
	}
	if got, want := int64(be.live-before), m.SelectedHeadBytes(n, true); got != want {
		t.Fatalf("a selected head of %d positions allocated %d bytes, SelectedHeadBytes says %d", n, got, want)
	}
	if grow := m.SelectedHeadBytes(2*n, true) - m.SelectedHeadBytes(n, true); grow >= 4*int64(n*cfg.PaddedVocabSize) {
		t.Fatalf("%d more positions grow the head by %d bytes: a term of positions × vocabulary", n, grow)
	}
}

// targets2cut is n cutoffs that keep every token.
func targets2cut(n int) []float32 {
	c := make([]float32, n)
	for i := range c {
		c[i] = float32(math.Inf(-1))
	}
	return c
}
