package gpt2_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

var tapeCfg = gpt2.Config{NumLayers: 2, NumHeads: 3, Channels: 24, MaxSeqLen: 12, VocabSize: 29, PaddedVocabSize: 32}

const tapeB, tapeT, tapeTemp = 2, 7, 0.8

func tapeModel(t *testing.T, grads bool) *gpt2.Model {
	t.Helper()
	m, err := gpt2.New(cpu.New(), tapeCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(5); err != nil {
		t.Fatal(err)
	}
	if grads {
		if err := m.EnableGrads(); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func tapeTokens() (inputs, targets []int32) {
	r := rng.New(31)
	inputs, targets = make([]int32, tapeB*tapeT), make([]int32, tapeB*tapeT)
	for i := range inputs {
		inputs[i], targets[i] = int32(r.Intn(tapeCfg.VocabSize)), int32(r.Intn(tapeCfg.VocabSize))
	}
	return inputs, targets
}

// outputs are host copies of what one pass produced.
type outputs struct{ logits, logp, entropy []float32 }

// pass runs Forward and LogProbs on tp (which may be nil) and copies the results to the host.
func pass(t *testing.T, m *gpt2.Model, tp *autograd.Tape, inputs, targets []int32) outputs {
	t.Helper()
	if err := m.Forward(tp, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	logp, ent, err := m.LogProbs(tp, targets, nil, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	var o outputs
	for _, c := range []struct {
		dst *[]float32
		src *tensor.Tensor
	}{{&o.logits, m.Logits().Value}, {&o.logp, logp.Value}, {&o.entropy, ent.Value}} {
		if *c.dst, err = tensor.ToHost(c.src); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func bitwiseEqual(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d values", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: %v vs %v, want bitwise equal", what, i, a[i], b[i])
		}
	}
}

func sameOutputs(t *testing.T, label string, a, b outputs) {
	t.Helper()
	bitwiseEqual(t, label+": logits", a.logits, b.logits)
	bitwiseEqual(t, label+": logp", a.logp, b.logp)
	bitwiseEqual(t, label+": entropy", a.entropy, b.entropy)
}

func TestTapeModesBitwiseEqual(t *testing.T) {
	inputs, targets := tapeTokens()
	m := tapeModel(t, true)
	// nil first, so the recording pass also exercises the switch to activations with gradients.
	plain := pass(t, m, nil, inputs, targets)
	tp := autograd.NewTape()
	rec := pass(t, m, tp, inputs, targets)
	if tp.Len() == 0 {
		t.Fatal("the recording pass recorded nothing")
	}
	tp.Reset()
	nt := autograd.NewTape()
	var off outputs
	autograd.NoGrad(nt, func() { off = pass(t, m, nt, inputs, targets) })
	if nt.Len() != 0 {
		t.Fatalf("NoGrad pass recorded %d nodes", nt.Len())
	}
	sameOutputs(t, "recording vs nil tape", rec, plain)
	sameOutputs(t, "recording vs NoGrad", rec, off)

	// Values are real: log-probs are negative, entropies within (0, log V].
	for i, lp := range rec.logp {
		if !(lp < 0) || !(rec.entropy[i] > 0) || rec.entropy[i] > float32(math.Log(float64(tapeCfg.VocabSize)))+1e-5 {
			t.Fatalf("token %d: logp %v, entropy %v out of range", i, lp, rec.entropy[i])
		}
	}

	// The same in the other order, on a model that starts with gradient activations.
	m2 := tapeModel(t, true)
	tp2 := autograd.NewTape()
	sameOutputs(t, "fresh model, recording first", pass(t, m2, tp2, inputs, targets), rec)
	tp2.Reset()
	sameOutputs(t, "fresh model, then nil tape", pass(t, m2, nil, inputs, targets), rec)
}

// A frozen reference loaded from the policy's parameters gives bitwise-equal log-probs until the
// policy takes a step, and differs after it.
func TestFrozenReferenceEqualsPolicy(t *testing.T) {
	inputs, targets := tapeTokens()
	policy := tapeModel(t, true)
	params, err := policy.ParamsToHost()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := gpt2.New(cpu.New(), tapeCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.SetParams(params); err != nil {
		t.Fatal(err)
	}
	var refOut outputs
	autograd.NoGrad(nil, func() { refOut = pass(t, ref, nil, inputs, targets) })

	tp := autograd.NewTape()
	polOut := pass(t, policy, tp, inputs, targets)
	sameOutputs(t, "policy vs frozen reference", polOut, refOut)

	// One policy-gradient step on sum(logp): the reference must stay where it was.
	policy.ZeroActGrads()
	policy.ZeroGrad()
	logp, _, err := policy.LogProbs(nil, targets, nil, tapeTemp) // the Vars; the tape already holds the op
	if err != nil {
		t.Fatal(err)
	}
	policy.Backend.Fill(logp.Grad, -1/float32(tapeB*tapeT))
	tp.Backward()
	opt, err := optim.NewAdamW(policy.Params, optim.DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	opt.Update(policy.Params, policy.Grads, 1e-3)
	after := pass(t, policy, nil, inputs, targets)
	again := pass(t, ref, nil, inputs, targets)
	sameOutputs(t, "frozen reference before and after the policy step", again, refOut)
	var meanBefore, meanAfter float64
	for i := range after.logp {
		meanBefore += float64(polOut.logp[i])
		meanAfter += float64(after.logp[i])
	}
	if !(meanAfter > meanBefore) {
		t.Fatalf("a step up the log-likelihood moved the mean logp from %v to %v", meanBefore, meanAfter)
	}
}

// Later positions never change earlier logits (causal attention), bit for bit.
func TestCausal(t *testing.T) {
	inputs, targets := tapeTokens()
	m := tapeModel(t, false)
	a := pass(t, m, nil, inputs, targets)
	changed := append([]int32(nil), inputs...)
	const cut = 4
	for b := range tapeB {
		for tt := cut; tt < tapeT; tt++ {
			changed[b*tapeT+tt] = (changed[b*tapeT+tt] + 1) % int32(tapeCfg.VocabSize)
		}
	}
	b := pass(t, m, nil, changed, targets)
	Vp := tapeCfg.PaddedVocabSize
	differs := false
	for row := range tapeB {
		for tt := range tapeT {
			i := row*tapeT + tt
			la, lb := a.logits[i*Vp:(i+1)*Vp], b.logits[i*Vp:(i+1)*Vp]
			if tt < cut {
				bitwiseEqual(t, fmt.Sprintf("logits at row %d position %d before the change", row, tt), la, lb)
			} else if la[0] != lb[0] {
				differs = true
			}
		}
	}
	if !differs {
		t.Fatal("changing tokens did not change any later logit")
	}
}

// noPanic runs fn and turns a panic into a test failure that names the call.
func noPanic(t *testing.T, what string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = nil
		}
	}()
	return fn()
}

func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not mention %q", what, err, p)
		}
	}
}

func TestBadInput(t *testing.T) {
	inputs, targets := tapeTokens()
	m := tapeModel(t, true)
	good := pass(t, m, nil, inputs, targets)
	V := tapeCfg.VocabSize

	with := func(ids []int32, i int, v int32) []int32 {
		out := append([]int32(nil), ids...)
		out[i] = v
		return out
	}
	cases := []struct {
		name  string
		call  func() error
		parts []string
	}{
		{"input id = V", func() error { return m.Forward(nil, with(inputs, 9, int32(V)), tapeB, tapeT) },
			[]string{"inputs[9]", "batch row 1, position 2", fmt.Sprintf("token id %d", V), "vocabulary [0, 29)"}},
		{"input id in the padded rows", func() error { return m.Forward(nil, with(inputs, 0, int32(V+2)), tapeB, tapeT) },
			[]string{"inputs[0]", fmt.Sprintf("token id %d", V+2)}},
		{"negative input id", func() error { return m.Forward(nil, with(inputs, 13, -1), tapeB, tapeT) },
			[]string{"inputs[13]", "token id -1"}},
		{"T > maxT", func() error { return m.Forward(nil, make([]int32, 13), 1, 13) },
			[]string{"sequence length 13", "max_seq_len 12"}},
		{"wrong length", func() error { return m.Forward(nil, inputs[:5], tapeB, tapeT) },
			[]string{"has 5 tokens", "want B*T", "14"}},
		{"zero batch", func() error { return m.Forward(nil, nil, 0, tapeT) },
			[]string{"batch size 0", "positive"}},
		{"negative B and T", func() error { return m.Forward(nil, inputs[:2], -1, -2) },
			[]string{"batch size -1", "sequence length -2", "positive"}},
		{"target id = V", func() error {
			_, err := m.ForwardLoss(nil, inputs, with(targets, 3, int32(V)), tapeB, tapeT)
			return err
		}, []string{"targets[3]", fmt.Sprintf("token id %d", V)}},
		{"negative target", func() error {
			_, err := m.ForwardLoss(nil, inputs, with(targets, 1, -7), tapeB, tapeT)
			return err
		}, []string{"targets[1]", "token id -7"}},
		{"LogProbs target id = V", func() error {
			_, _, err := m.LogProbs(nil, with(targets, 2, int32(V)), nil, tapeTemp)
			return err
		}, []string{"targets[2]", fmt.Sprintf("token id %d", V)}},
		{"LogProbs wrong length", func() error {
			_, _, err := m.LogProbs(nil, targets[:3], nil, tapeTemp)
			return err
		}, []string{"has 3 tokens"}},
		{"LogProbs temperature 0", func() error {
			_, _, err := m.LogProbs(nil, targets, nil, 0)
			return err
		}, []string{"temperature 0"}},
		{"LogProbs temperature NaN", func() error {
			_, _, err := m.LogProbs(nil, targets, nil, float32(math.NaN()))
			return err
		}, []string{"temperature NaN"}},
		{"LogProbs temperature -1", func() error {
			_, _, err := m.LogProbs(nil, targets, nil, -1)
			return err
		}, []string{"temperature -1"}},
		{"SetParams wrong length", func() error { return m.SetParams(make([]float32, 10)) },
			[]string{"10 parameter values"}},
	}
	for _, c := range cases {
		err := noPanic(t, c.name, c.call)
		wantErr(t, c.name, err, c.parts...)
	}
	// A recording tape on a model without gradients, and LogProbs before any Forward.
	bare := tapeModel(t, false)
	wantErr(t, "recording without EnableGrads", noPanic(t, "recording without EnableGrads", func() error {
		return bare.Forward(autograd.NewTape(), inputs, tapeB, tapeT)
	}), "EnableGrads")
	wantErr(t, "LogProbs before Forward", noPanic(t, "LogProbs before Forward", func() error {
		_, _, err := bare.LogProbs(nil, targets, nil, 1)
		return err
	}), "Forward first")
	wantErr(t, "Backward with an empty tape", noPanic(t, "Backward with an empty tape", func() error {
		return m.Backward(autograd.NewTape())
	}), "ForwardLoss")
	// The failed calls left the model as it was.
	sameOutputs(t, "after the rejected calls", pass(t, m, nil, inputs, targets), good)
}

// An infinite temperature is user input too (a flag), so it must be an error like 0 or NaN.
func TestLogProbsInfiniteTemperature(t *testing.T) {
	inputs, targets := tapeTokens()
	m := tapeModel(t, false)
	if err := m.Forward(nil, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	err := noPanic(t, "LogProbs(+Inf)", func() error {
		_, _, err := m.LogProbs(nil, targets, nil, float32(math.Inf(1)))
		return err
	})
	wantErr(t, "LogProbs temperature +Inf", err, "temperature")
}

// TestShapeChangesReuseBuffers runs batches of several shapes through one model and checks each
// against a fresh model, so re-laid-out activation buffers never leak values between shapes.
func TestShapeChangesReuseBuffers(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: 37, PaddedVocabSize: 40, NumLayers: 1, NumHeads: 2, Channels: 8}
	shared, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	params, _ := shared.ParamsToHost()
	for _, shape := range [][2]int{{2, 16}, {1, 5}, {3, 7}, {2, 16}, {4, 9}} {
		B, T := shape[0], shape[1]
		ids := make([]int32, B*T)
		for i := range ids {
			ids[i] = int32((i*7 + B) % cfg.VocabSize)
		}
		got, err := shared.ForwardLoss(nil, ids, ids, B, T)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := gpt2.New(cpu.New(), cfg)
		fresh.SetParams(params)
		want, err := fresh.ForwardLoss(nil, ids, ids, B, T)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("B=%d T=%d: loss %v after other shapes, %v fresh", B, T, got, want)
		}
	}
}
