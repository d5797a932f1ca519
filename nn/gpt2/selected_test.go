package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
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
