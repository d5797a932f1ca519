package rl

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// paddedToyLlama is a toy Qwen3 whose vocabulary has 24 rows past the toy tokenizer's ids, made
// large enough that an unmasked sampler draws them nearly always.
func paddedToyLlama(t *testing.T) *nn.LlamaLM {
	t.Helper()
	tokens := toyEOS + 1
	cfg := llama.Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2,
		HeadDim: 8, Intermediate: 64, Vocab: tokens + 24, MaxPositions: 16, RMSNormEps: 1e-6, RopeTheta: 10000,
		QKNorm: true, TieEmbeddings: true, EOS: []int{toyEOS}}
	m, err := llama.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(4); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Params.ToHost()
	emb := m.Config.ParamSpecs()[0]
	if emb.Name != "model.embed_tokens.weight" {
		t.Fatalf("first parameter %s", emb.Name)
	}
	for i := tokens * cfg.Hidden; i < emb.Numel(); i++ {
		p[emb.Offset+i] = float32(math.Sin(float64(i))) * 20
	}
	if err := m.Params.Upload(p); err != nil {
		t.Fatal(err)
	}
	return nn.Llama(m)
}

// TestFaultPaddedVocabularyDoesNotEndARun: GRPO over a model whose vocabulary is padded past
// its tokenizer's ids fails on the first padding id drawn, as a Qwen3 did; with the policy
// limited to the tokenizer's ids, it trains, scoring (policy and KL reference alike) exactly
// the tokens it sampled.
func TestFaultPaddedVocabularyDoesNotEndARun(t *testing.T) {
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.GRPO.GroupSize, cfg.GRPO.Beta = 4, 0.02
	tr, err := NewGRPOTrainer(paddedToyLlama(t), toy, toyPrompts(false), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainStep(); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("unlimited padded vocabulary: step error %v, want a decoding error", err)
	} else {
		t.Logf("unlimited: %v", err)
	}

	p := paddedToyLlama(t)
	rows, err := LimitVocab(p, toyEOS+1)
	if err != nil || rows != toyEOS+25 || p.VocabSize() != toyEOS+1 {
		t.Fatalf("LimitVocab: %d rows, %v; VocabSize %d", rows, err, p.VocabSize())
	}
	if tr, err = NewGRPOTrainer(p, toy, toyPrompts(false), countA(), cfg); err != nil {
		t.Fatal(err)
	}
	for s := range 3 {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatalf("step %d: %v", s+1, err)
		}
		if rep.Metrics["token_alignment"] != 1 || rep.Metrics["recompute_mismatch"] != 0 || !(rep.Metrics["logp_mismatch_max"] < 1e-4) {
			t.Fatalf("step %d: token alignment %v, recompute mismatches %v, log-prob mismatch %v", s+1,
				rep.Metrics["token_alignment"], rep.Metrics["recompute_mismatch"], rep.Metrics["logp_mismatch_max"])
		}
	}
}
