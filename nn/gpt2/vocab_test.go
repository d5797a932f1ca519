package gpt2

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestFaultVocabularyPastTheTokenizerIsMasked: a GPT-2 whose vocabulary holds ids its tokenizer
// lacks, limited to the tokenizer's, never draws them though their logits are the largest, its
// selected head scores the tokens drawn with the sampler's log-probs, and those rows of wte get
// no gradient from the head.
func TestFaultVocabularyPastTheTokenizerIsMasked(t *testing.T) {
	const tokens, B, P, n = 400, 4, 2, 6
	be := cpu.New()
	cfg := presets["tiny"]
	m, err := New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Params.ToHost()
	C := cfg.Channels
	for i := tokens * C; i < cfg.VocabSize*C; i++ { // wte comes first
		p[i] = float32(math.Sin(float64(i))) * 20
	}
	if err := m.Params.Upload(p); err != nil {
		t.Fatal(err)
	}
	if err := m.LimitVocab(tokens); err != nil {
		t.Fatal(err)
	}
	d, err := m.NewDecoder(B, P+n)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int32{{5, 6}, {5, 6}, {5, 6}, {5, 6}}
	res, err := sample.Generate(d, prompts, n, -1, sample.Options{Temperature: 1}, sample.NewRNG(2))
	if err != nil {
		t.Fatal(err)
	}
	var toks []int32
	var pos []int
	var tgt []int32
	for b, row := range res.Tokens {
		for j, id := range row {
			if id >= tokens {
				t.Fatalf("row %d drew id %d, past the tokenizer's %d", b, id, tokens)
			}
			pos, tgt = append(pos, b*(P+n)+P-1+j), append(tgt, id)
		}
		toks = append(append(toks, prompts[b]...), row...)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, toks, B, P+n); err != nil {
		t.Fatal(err)
	}
	h := m.NewSelectedHead()
	logp, _, err := h.Forward(tp, pos, tgt, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := tensor.ToHost(logp.Value)
	for k := range pos {
		if want := res.LogProbs[k/n][k%n]; math.Abs(float64(got[k]-want)) > 1e-4 {
			t.Errorf("token %d: training log-prob %.6f, sampling log-prob %.6f", k, got[k], want)
		}
	}
	m.ZeroGrad()
	be.Fill(logp.Grad, 1)
	tp.Backward()
	g, _ := m.Grads.ToHost()
	for i := tokens * C; i < cfg.PaddedVocabSize*C; i++ {
		if g[i] != 0 {
			t.Fatalf("wte row %d, past the tokenizer's ids, has gradient %v", i/C, g[i])
		}
	}
}
