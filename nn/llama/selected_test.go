package llama

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestSelectedHeadMatchesReference checks the selected head's log-probs and entropies against
// the fixtures' float64 logits (at a temperature, with and without a truncation cutoff), and that
// seeding every position's log-prob gradient with -1/N reproduces the reference gradients of the
// mean loss: the chunked lm head's backward through the trunk.
func TestSelectedHeadMatchesReference(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		for _, bname := range []string{"cpu", "vulkan"} {
			t.Run(filepath.Base(dir)+"/"+bname, func(t *testing.T) { checkSelectedHead(t, backends[bname](t), dir) })
		}
	}
}

func checkSelectedHead(t *testing.T, be tensor.Backend, dir string) {
	e, sf := readExpected(t, dir)
	m, err := Load(be, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	m.HeadChunkRows = 4 // several chunks, the last one short
	inputs, targets := flatten(e.InputIDs), flatten(e.Targets)
	N, V := e.B*e.T, m.Config.Vocab
	ref, _ := sf.Float32("logits_f64")
	h := m.NewSelectedHead()
	defer h.Free()

	// Every other position, at temperature 0.7, half of them truncated to their top 5 tokens.
	if err := m.ForwardTrunk(nil, inputs, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	var pos []int
	var tgt []int32
	var cut []float32
	for p := 1; p < N; p += 2 {
		pos, tgt = append(pos, p), append(tgt, targets[p])
		c := float32(math.Inf(-1))
		if len(pos)%2 == 0 {
			row := ref[p*V : (p+1)*V]
			c = (kthLargest(row, 5) + kthLargest(row, 6)) / 2 // clear of float32 rounding
		}
		cut = append(cut, c)
	}
	const temp = 0.7
	logp, ent, err := h.Forward(nil, pos, tgt, cut, temp)
	if err != nil {
		t.Fatal(err)
	}
	gotLp, _ := tensor.ToHost(logp.Value)
	gotEnt, _ := tensor.ToHost(ent.Value)
	for k, p := range pos {
		wantLp, wantEnt := refLogProb(ref[p*V:(p+1)*V], int(tgt[k]), float64(cut[k]), temp)
		if math.Abs(float64(gotLp[k])-wantLp) > 1e-4 || math.Abs(float64(gotEnt[k])-wantEnt) > 1e-4 {
			t.Errorf("position %d: logp %.6f entropy %.6f, reference %.6f %.6f", p, gotLp[k], gotEnt[k], wantLp, wantEnt)
		}
	}

	// The gradient of the mean loss through every position.
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, inputs, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	all := make([]int, N)
	for i := range all {
		all[i] = i
	}
	logp, _, err = h.Forward(tp, all, targets, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	m.ZeroTrunkGrads()
	be.Fill(logp.Grad, -1/float32(N))
	tp.Backward()
	grads, _ := m.Grads.ToHost()
	for _, s := range m.Config.ParamSpecs() {
		want, err := sf.Float32("grad_f64." + s.Name)
		if err != nil {
			t.Fatal(err)
		}
		var scale float64
		for _, v := range want {
			scale = max(scale, math.Abs(float64(v)))
		}
		if d := maxAbsDiff(grads[s.Offset:s.Offset+s.Numel()], want); d > 1e-4*scale {
			t.Errorf("gradient of %s differs by %.3g (tolerance 1e-4 × max |g| = %.3g)", s.Name, d, 1e-4*scale)
		}
	}
}

// kthLargest is the k-th largest value of xs (k = 1: the maximum).
func kthLargest(xs []float32, k int) float32 {
	taken := make([]bool, len(xs))
	var v float32
	for range k {
		best := -1
		for i, x := range xs {
			if !taken[i] && (best < 0 || x > xs[best]) {
				best = i
			}
		}
		taken[best], v = true, xs[best]
	}
	return v
}

// refLogProb is the log-prob of target and the entropy of softmax(logits/temp) in float64,
// over the tokens whose logit is at least cut (and the target).
func refLogProb(logits []float32, target int, cut, temp float64) (logp, entropy float64) {
	keep := func(i int) bool { return float64(logits[i]) >= cut || i == target }
	mx := math.Inf(-1)
	for i, l := range logits {
		if keep(i) {
			mx = max(mx, float64(l)/temp)
		}
	}
	var z float64
	for i, l := range logits {
		if keep(i) {
			z += math.Exp(float64(l)/temp - mx)
		}
	}
	lz := mx + math.Log(z)
	for i, l := range logits {
		if keep(i) {
			lp := float64(l)/temp - lz
			entropy -= math.Exp(lp) * lp
		}
	}
	return float64(logits[target])/temp - lz, entropy
}

// With LoRA adapters, the selected head's backward reaches the adapters exactly as the
// chunked loss's does: seeding every log-prob with -1/N gives the mean loss's gradients.
func TestSelectedHeadTrainsAdapters(t *testing.T) {
	m, e := loadFixture(t, cpu.New(), "qwen3-tiny")
	if err := m.EnableLoRA(LoRAConfig{Rank: 3, Alpha: 6}, 2); err != nil {
		t.Fatal(err)
	}
	params, grads := m.Trainable()
	p := cpu.Float32s(params.Parts()[0])
	r := rng.New(3)
	for i := range p { // B nonzero too, so A's gradient is not zero
		p[i] += float32(0.05 * r.Normal())
	}
	in, tg := flatten(e.InputIDs), flatten(e.Targets)
	N := e.B * e.T
	tp := autograd.NewTape()
	m.ZeroTrainableGrads()
	if _, err := m.ForwardLoss(tp, in, tg, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), cpu.Float32s(grads.Parts()[0])...)
	h := m.NewSelectedHead()
	defer h.Free()
	m.HeadChunkRows = 7
	if err := m.ForwardTrunk(tp, in, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	all := make([]int, N)
	for i := range all {
		all[i] = i
	}
	logp, _, err := h.Forward(tp, all, tg, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroTrainableGrads()
	m.ZeroTrunkGrads()
	m.Backend.Fill(logp.Grad, -1/float32(N))
	tp.Backward()
	got := cpu.Float32s(grads.Parts()[0])
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	if d := maxAbsDiff(got, want); d > 1e-5*scale || scale == 0 {
		t.Fatalf("adapter gradients differ by %.3g (max |g| %.3g)", d, scale)
	}
}
