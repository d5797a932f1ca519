package sample

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func testModel(t *testing.T) *gpt2.Model {
	t.Helper()
	cfg := gpt2.Config{MaxSeqLen: 24, VocabSize: 37, PaddedVocabSize: 40, NumLayers: 2, NumHeads: 3, Channels: 24}
	m, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(11); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDecoderMatchesForward feeds a prompt in one chunk and then one token at a time and checks
// each step's logits against a full forward pass over the same prefix.
func TestDecoderMatchesForward(t *testing.T) {
	m := testModel(t)
	const B, T = 2, 13
	r := rng.New(5)
	seq := make([]int32, B*T)
	for i := range seq {
		seq[i] = int32(r.Intn(m.Config.VocabSize))
	}
	if err := m.Forward(nil, seq, B, T); err != nil {
		t.Fatal(err)
	}
	full, err := tensor.ToHost(m.Logits().Value)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.NewDecoder(B, m.Config.MaxSeqLen)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	Vp, V := m.Config.PaddedVocabSize, m.Config.VocabSize
	const prompt = 5
	rows := func(from, n int) []int32 {
		out := make([]int32, 0, B*n)
		for b := 0; b < B; b++ {
			out = append(out, seq[b*T+from:b*T+from+n]...)
		}
		return out
	}
	check := func(pos int, got []float32) {
		for b := 0; b < B; b++ {
			for v := 0; v < V; v++ {
				want := full[(b*T+pos)*Vp+v]
				if diff := math.Abs(float64(got[b*Vp+v] - want)); diff > 2e-5 {
					t.Fatalf("position %d row %d token %d: decoder %v, forward %v", pos, b, v, got[b*Vp+v], want)
				}
			}
		}
	}
	logits, err := d.Step(rows(0, prompt), prompt)
	if err != nil {
		t.Fatal(err)
	}
	check(prompt-1, logits)
	for pos := prompt; pos < T; pos++ {
		if logits, err = d.Step(rows(pos, 1), 1); err != nil {
			t.Fatal(err)
		}
		check(pos, logits)
	}
	if _, err := d.Step(make([]int32, B*m.Config.MaxSeqLen), m.Config.MaxSeqLen); err == nil {
		t.Error("overfilling the cache was accepted")
	}
}

func TestGenerateDeterministic(t *testing.T) {
	m := testModel(t)
	d, err := m.NewDecoder(3, 20)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int32{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
	opt := Options{Temperature: 0.9, TopK: 10, TopP: 0.95}
	a, err := Generate(d, prompts, 12, 0, opt, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(d, prompts, 12, 0, opt, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different generations")
	}
	// The rows are picked in parallel from uniforms drawn in row order: one worker draws the same.
	prev := runtime.GOMAXPROCS(1)
	c, err := Generate(d, prompts, 12, 0, opt, rng.New(1))
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, c) {
		t.Error("one worker gave different generations")
	}
	for row, toks := range a.Tokens {
		for i, tok := range toks {
			if tok == 0 && i != len(toks)-1 {
				t.Errorf("row %d continued after EOS", row)
			}
			if a.LogProbs[row][i] > 0 || a.Trunc[row][i] < a.LogProbs[row][i] {
				t.Errorf("row %d token %d: logp %v trunc %v", row, i, a.LogProbs[row][i], a.Trunc[row][i])
			}
			// Top-k 10 of 37 tokens always truncates.
			if k, c := a.Kept[row][i], a.Cutoff[row][i]; k < 1 || k > 10 || math.IsInf(float64(c), 0) {
				t.Errorf("row %d token %d: %d kept, cutoff %v", row, i, k, c)
			}
		}
		if !a.Finished[row] && len(toks) != 12 {
			t.Errorf("unfinished row %d has %d tokens, want 12", row, len(toks))
		}
	}
	if _, err := Generate(d, [][]int32{{1}, {2, 3}, {4}}, 4, 0, opt, rng.New(1)); err == nil {
		t.Error("ragged prompts accepted")
	}
	// Greedy needs no random source and, without an EOS, fills the decoder.
	g, err := Generate(d, prompts, 30, -1, Options{TopP: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for row, toks := range g.Tokens {
		if len(toks) != 17 || g.Finished[row] {
			t.Errorf("greedy row %d: %d tokens, finished %v; want 17 and not finished", row, len(toks), g.Finished[row])
		}
	}
}
