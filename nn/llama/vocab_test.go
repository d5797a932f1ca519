package llama

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
)

// paddedModel is a tiny random Qwen3 of vocab rows whose distribution LimitVocab confines to
// the first tokens; the padding rows of its (tied) embedding are made large, so their logits
// would dominate every row if they were not masked.
func paddedModel(t *testing.T, be tensor.Backend, vocab, tokens int) *Model {
	t.Helper()
	cfg := Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2,
		HeadDim: 8, Intermediate: 64, Vocab: vocab, MaxPositions: 32, RMSNormEps: 1e-6, RopeTheta: 10000,
		QKNorm: true, TieEmbeddings: true}
	m, err := New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(5); err != nil {
		t.Fatal(err)
	}
	p, err := m.Params.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	emb := embedSpec(t, m)
	for i := tokens * cfg.Hidden; i < vocab*cfg.Hidden; i++ {
		p[emb.Offset+i] = float32(math.Sin(float64(i))) * 20
	}
	if err := m.Params.Upload(p); err != nil {
		t.Fatal(err)
	}
	if err := m.LimitVocab(tokens); err != nil {
		t.Fatal(err)
	}
	return m
}

func embedSpec(t *testing.T, m *Model) ParamSpec {
	for _, s := range m.Config.ParamSpecs() {
		if s.Name == embedName {
			return s
		}
	}
	t.Fatal("no embedding")
	return ParamSpec{}
}

// TestFaultPaddedVocabularyIsMasked: with the distribution limited to the tokenizer's ids, the
// decoder never draws a padding id (whose logits are the largest), the selected head's
// log-probs of the tokens drawn are those the sampler reported (the masked softmax on both
// sides), and the padding rows receive no gradient, through the selected head and through the
// chunked loss alike; without the limit, padding ids are drawn and their rows get gradients.
func TestFaultPaddedVocabularyIsMasked(t *testing.T) {
	for _, bname := range []string{"cpu", "vulkan"} {
		t.Run(bname, func(t *testing.T) { checkPaddedVocabulary(t, backends[bname](t)) })
	}
}

func checkPaddedVocabulary(t *testing.T, be tensor.Backend) {
	const vocab, tokens, B, P, n = 48, 40, 6, 3, 8
	m := paddedModel(t, be, vocab, tokens)
	toks, res := sampleRows(t, m, B, P, n)
	for b, row := range res.Tokens {
		for _, id := range row {
			if id >= tokens {
				t.Fatalf("row %d drew padding id %d (tokens %d)", b, id, tokens)
			}
		}
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	h := m.NewSelectedHead()
	defer h.Free()
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, toks, B, P+n); err != nil {
		t.Fatal(err)
	}
	var pos []int
	var tgt []int32
	for b := range B {
		for j := range n {
			pos, tgt = append(pos, b*(P+n)+P-1+j), append(tgt, res.Tokens[b][j])
		}
	}
	logp, ent, err := h.Forward(tp, pos, tgt, nil, 1)
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
	m.ZeroTrunkGrads()
	be.Fill(logp.Grad, 1)
	be.Fill(ent.Grad, 0.5)
	tp.Backward()
	checkPaddingGrads(t, m, tokens, "selected head")

	m.ZeroGrad()
	tp = autograd.NewTape()
	var in, next []int32
	for b := range B {
		row := toks[b*(P+n) : (b+1)*(P+n)]
		in, next = append(in, row[:P+n-1]...), append(next, row[1:]...)
	}
	if _, err := m.ForwardLoss(tp, in, next, B, P+n-1); err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	checkPaddingGrads(t, m, tokens, "chunked loss")
	if _, err := m.ForwardLoss(nil, []int32{1}, []int32{tokens}, 1, 1); err == nil {
		t.Errorf("a padding id as a target was accepted")
	}

	// The same model over its whole vocabulary draws padding ids.
	if err := m.LimitVocab(vocab); err != nil {
		t.Fatal(err)
	}
	_, res = sampleRows(t, m, B, P, n)
	padded := 0
	for _, row := range res.Tokens {
		for _, id := range row {
			if id >= tokens {
				padded++
			}
		}
	}
	if padded == 0 {
		t.Fatalf("the unlimited model drew no padding id: the test's padding logits are not large")
	}
}

// sampleRows draws n tokens after the same P-token prompt in B rows at temperature 1 and
// returns the rows, prompt and completion, flattened.
func sampleRows(t *testing.T, m *Model, B, P, n int) ([]int32, *sample.Result) {
	t.Helper()
	d, err := m.NewDecoder(B, P+n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	prompt := []int32{1, 2, 3}[:P]
	prompts := make([][]int32, B)
	for b := range prompts {
		prompts[b] = prompt
	}
	res, err := sample.Generate(d, prompts, n, -1, sample.Options{Temperature: 1}, sample.NewRNG(9))
	if err != nil {
		t.Fatal(err)
	}
	var toks []int32
	for b := range B {
		if len(res.Tokens[b]) != n {
			t.Fatalf("row %d: %d tokens, want %d", b, len(res.Tokens[b]), n)
		}
		toks = append(append(toks, prompt...), res.Tokens[b]...)
	}
	return toks, res
}

// checkPaddingGrads requires the embedding rows from tokens on to have a zero gradient, and the
// others some gradient.
func checkPaddingGrads(t *testing.T, m *Model, tokens int, what string) {
	t.Helper()
	g, err := m.Grads.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	emb, C := embedSpec(t, m), m.Config.Hidden
	rows := g[emb.Offset : emb.Offset+emb.Numel()]
	var real float64
	for i, v := range rows {
		if i >= tokens*C && v != 0 {
			t.Fatalf("%s: padding row %d has gradient %v", what, i/C, v)
		}
		real += math.Abs(float64(v))
	}
	if real == 0 {
		t.Fatalf("%s: no gradient at all", what)
	}
}
