package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The selected head gives the full head's log-probs, entropies and parameter gradients at the
// chosen positions, and its tape and no-tape passes are bitwise equal.
func TestSelectedHeadMatchesFullHead(t *testing.T) {
	inputs, targets := tapeTokens()
	positions := []int{2, 3, 4, 8, 9, 13} // two runs in row 0, one in row 1
	sel := make([]int32, len(positions))
	r := rng.New(9)
	seed := make([]float32, len(positions))
	for k, p := range positions {
		sel[k] = targets[p]
		seed[k] = float32(r.Normal())
	}

	full := tapeModel(t, true)
	tp := autograd.NewTape()
	if err := full.Forward(tp, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	logp, ent, err := full.LogProbs(tp, targets, nil, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	wantLogp, _ := tensor.ToHost(logp.Value)
	wantEnt, _ := tensor.ToHost(ent.Value)
	full.ZeroGrad()
	full.ZeroActGrads()
	g := make([]float32, tapeB*tapeT)
	for k, p := range positions {
		g[p] = seed[k]
	}
	if err := full.Backend.Upload(logp.Grad, g); err != nil {
		t.Fatal(err)
	}
	tp.Backward()
	wantGrads, _ := full.GradsToHost()

	m := tapeModel(t, true)
	head := m.NewSelectedHead()
	var noTape []float32
	for _, rec := range []bool{false, true} {
		var tp *autograd.Tape
		if rec {
			tp = autograd.NewTape()
		}
		if err := m.ForwardTrunk(tp, inputs, tapeB, tapeT); err != nil {
			t.Fatal(err)
		}
		lp, en, err := head.Forward(tp, positions, sel, nil, tapeTemp)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := tensor.ToHost(lp.Value)
		gotEnt, _ := tensor.ToHost(en.Value)
		for k, p := range positions {
			if math.Abs(float64(got[k]-wantLogp[p])) > 1e-5 || math.Abs(float64(gotEnt[k]-wantEnt[p])) > 1e-5 {
				t.Fatalf("position %d: logp %v entropy %v, full head %v %v", p, got[k], gotEnt[k], wantLogp[p], wantEnt[p])
			}
		}
		if !rec {
			noTape = got
			continue
		}
		bitwiseEqual(t, "selected logp with and without the tape", noTape, got)
		m.ZeroGrad()
		m.ZeroTrunkGrads()
		if err := m.Backend.Upload(lp.Grad, seed); err != nil {
			t.Fatal(err)
		}
		tp.Backward()
		gotGrads, _ := m.GradsToHost()
		var worst float64
		for i := range wantGrads {
			worst = math.Max(worst, math.Abs(float64(gotGrads[i]-wantGrads[i]))/(1e-3+math.Abs(float64(wantGrads[i]))))
		}
		if worst > 1e-3 {
			t.Fatalf("parameter gradients differ from the full head's by a relative %g", worst)
		}
	}
	if _, _, err := head.Forward(nil, []int{tapeB * tapeT}, []int32{1}, nil, 1); err == nil {
		t.Fatal("a position past the batch was accepted")
	}
	if _, _, err := head.Forward(nil, []int{0}, []int32{int32(tapeCfg.VocabSize)}, nil, 1); err == nil {
		t.Fatal("a target outside the vocabulary was accepted")
	}
}

// liveBytes counts the bytes a backend holds, so a test can see what a pass allocates.
type liveBytes struct {
	tensor.Backend
	live int
}

func (b *liveBytes) Alloc(dt tensor.DType, n int) (tensor.Storage, error) {
	s, err := b.Backend.Alloc(dt, n)
	if err == nil {
		b.live += 4 * n
	}
	return s, err
}

func (b *liveBytes) Free(s tensor.Storage) {
	b.live -= 4 * s.Len()
	b.Backend.Free(s)
}

// ForwardTrunk with a SelectedHead allocates none of the full head's (B*T x Vp) buffers; the
// first full Forward does, and a later trunk-only pass keeps and reuses them.
func TestTrunkAllocatesNoFullHead(t *testing.T) {
	be := &liveBytes{Backend: cpu.New()}
	cfg := gpt2.Config{NumLayers: 1, NumHeads: 2, Channels: 8, MaxSeqLen: 12, VocabSize: 2000, PaddedVocabSize: 2048}
	m, err := gpt2.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	inputs, targets := tapeTokens()
	logitsBytes := 4 * tapeB * tapeT * cfg.PaddedVocabSize
	base := be.live
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	trunk := be.live - base
	if _, _, err := m.LogProbs(tp, targets, nil, 1); err == nil {
		t.Fatalf("LogProbs after ForwardTrunk alone: want an error (there are no logits)")
	}
	head := m.NewSelectedHead()
	if _, _, err := head.Forward(tp, []int{0, 1}, targets[1:3], nil, 1); err != nil {
		t.Fatal(err)
	}
	selected := be.live - base - trunk
	if trunk >= logitsBytes || selected >= logitsBytes {
		t.Fatalf("trunk %d and selected head %d bytes: want each under one full logits buffer (%d bytes)", trunk, selected, logitsBytes)
	}
	tp.Reset()
	before := be.live
	if _, err := m.ForwardLoss(tp, inputs, targets, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	// Logits and their gradient; the loss is fused with its backward and keeps no probs.
	if got := be.live - before; got < 2*logitsBytes || got >= 3*logitsBytes {
		t.Fatalf("a full forward with gradients allocated %d bytes, want logits and their gradient (%d to %d)", got, 2*logitsBytes, 3*logitsBytes)
	}
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	before = be.live
	for range 2 {
		if err := m.ForwardTrunk(nil, inputs[:tapeT], 1, tapeT); err != nil {
			t.Fatal(err)
		}
		if _, err := m.ForwardLoss(nil, inputs, targets, tapeB, tapeT); err != nil {
			t.Fatal(err)
		}
	}
	if be.live != before {
		t.Fatalf("switching shapes changed the live bytes by %d: the head's buffers were not reused", be.live-before)
	}
}
