package sample

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestFaultNaNWeightsSample: a model with a NaN weight makes Generate fail with an error at
// every temperature (greedy included), never panic or print a token.
func TestFaultNaNWeightsSample(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: 40, PaddedVocabSize: 64, NumLayers: 1, NumHeads: 2, Channels: 8}
	m, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		p, _ := m.ParamsToHost()
		for i := range p[:cfg.Channels*cfg.VocabSize] {
			p[i] = bad
		}
		if err := m.SetParams(p); err != nil {
			t.Fatal(err)
		}
		for _, opt := range []Options{{}, {Temperature: 1, TopP: 1}, {Temperature: 0.7, TopK: 5, TopP: 0.9}} {
			d, err := m.NewDecoder(2, 16)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Generate(d, [][]int32{{1, 2}, {3, 4}}, 4, -1, opt, NewRNG(1))
			d.Close()
			if err == nil || !strings.Contains(err.Error(), "not finite") && !strings.Contains(err.Error(), "overflowed") && !strings.Contains(err.Error(), "-Inf") {
				t.Errorf("weights %v, options %+v: %v, want an error about non-finite logits", bad, opt, err)
			}
		}
	}
	if err := CheckLogits([]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 2); err == nil {
		t.Error("all -Inf logits should be refused")
	}
	if err := CheckLogits([]float32{1, float32(math.Inf(-1))}, 2); err != nil {
		t.Errorf("a -Inf logit (a masked token) is fine: %v", err)
	}
}
