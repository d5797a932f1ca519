package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
)

// TestGradsFinalReportsFinalRanges: every range OnGradsFinal reports already holds, when
// reported, the gradient Backward ends with, bit for bit; the ranges do not overlap; and what
// is never reported is wte, wpe and layer 0's ln1 (final when Backward returns).
func TestGradsFinalReportsFinalRanges(t *testing.T) {
	m := tapeModel(t, true)
	inputs, targets := tapeTokens()
	type snapshot struct {
		off    int
		values []float32
	}
	var snaps []snapshot
	var downloadErr error
	layers := 0
	m.OnGradsFinal(func(ranges [][2]int) {
		layers++
		all, err := m.Grads.ToHost() // the CPU computes as it records: this is the gradient now
		downloadErr = err
		for _, r := range ranges {
			snaps = append(snaps, snapshot{r[0], append([]float32(nil), all[r[0]:r[0]+r[1]]...)})
		}
	})
	tp := autograd.NewTape()
	if err := m.ForwardCrossEntropy(tp, inputs, targets, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	if downloadErr != nil {
		t.Fatal(downloadErr)
	}
	final, err := m.Grads.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	reported := make([]int, len(final)) // how many reports cover each element
	for _, s := range snaps {
		for i, v := range s.values {
			reported[s.off+i]++
			if math.Float32bits(v) != math.Float32bits(final[s.off+i]) {
				t.Fatalf("element %d was reported final at %v and ends at %v", s.off+i, v, final[s.off+i])
			}
		}
	}
	// Unreported: wte, wpe, then layer 0's ln1w and ln1b (the specs' first four, in order).
	C, L, Vp, T := tapeCfg.Channels, tapeCfg.NumLayers, tapeCfg.PaddedVocabSize, tapeCfg.MaxSeqLen
	unreported := map[int]bool{}
	for i := range (Vp + T) * C {
		unreported[i] = true
	}
	for i := range C {
		unreported[(Vp+T)*C+i], unreported[(Vp+T+L)*C+i] = true, true
	}
	for i, n := range reported {
		if want := 1; unreported[i] {
			want = 0
			if n != want {
				t.Fatalf("element %d (embeddings or layer 0's ln1) reported %d times", i, n)
			}
		} else if n != want {
			t.Fatalf("element %d reported %d times, want once", i, n)
		}
	}
	if layers != L || len(snaps) != L*12 {
		t.Errorf("%d ranges reported in %d calls, want one call a layer with 12 (its 10 tensors and the next layernorm's 2)", len(snaps), layers)
	}
}
