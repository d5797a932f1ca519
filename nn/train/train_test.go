package train

import (
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

var testCfg = gpt2.Config{MaxSeqLen: 16, VocabSize: 53, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 3, Channels: 24}

func corpus(n int) []int32 {
	r := rng.New(9)
	toks := make([]int32, n)
	for i := range toks {
		// A learnable pattern with noise: the next token is mostly the previous plus one.
		if i > 0 && r.Float64() < 0.8 {
			toks[i] = (toks[i-1] + 1) % int32(testCfg.VocabSize)
		} else {
			toks[i] = int32(r.Intn(testCfg.VocabSize))
		}
	}
	return toks
}

func newTrainer(t *testing.T, cfg Config) *Trainer {
	t.Helper()
	m, err := gpt2.New(cpu.New(), testCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(cfg.Seed); err != nil {
		t.Fatal(err)
	}
	tr, err := New(nn.GPT2(m), cfg, corpus(6000), "test corpus")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func testConfig() Config {
	c := DefaultConfig()
	c.Batch, c.Seq, c.Steps, c.Warmup, c.WeightDecay = 4, 12, 10, 3, 0.01
	return c
}

// TestResumeBitIdentical: 10 steps straight give the same parameters, bit for bit, as 5 steps,
// a checkpoint, a fresh process-like restore, and 5 more steps.
func TestResumeBitIdentical(t *testing.T) {
	cfg := testConfig()
	straight := newTrainer(t, cfg)
	var losses []float32
	for i := 0; i < 10; i++ {
		s, err := straight.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, s.Loss)
	}
	if !(losses[9] < losses[0]) {
		t.Errorf("loss did not fall over 10 steps: %v", losses)
	}

	first := newTrainer(t, cfg)
	for i := 0; i < 5; i++ {
		if _, err := first.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	second := newTrainer(t, cfg)
	if err := second.Restore(st, path); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 10; i++ {
		s, err := second.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if s.Loss != losses[i] {
			t.Errorf("step %d: resumed loss %v, straight %v", i+1, s.Loss, losses[i])
		}
	}
	a, _ := straight.Model.StateParams()
	b, _ := second.Model.StateParams()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d differs after resume: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestEvaluateAndErrors(t *testing.T) {
	tr := newTrainer(t, testConfig())
	before, err := tr.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := tr.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if !(after < before) {
		t.Errorf("validation loss %v -> %v did not fall", before, after)
	}
	m, _ := gpt2.New(cpu.New(), testCfg)
	bad := testConfig()
	bad.Seq = 17
	if _, err := New(nn.GPT2(m), bad, corpus(1000), "x"); err == nil {
		t.Error("seq > max_seq_len accepted")
	}
	bad = testConfig()
	bad.LR = 0
	if _, err := New(nn.GPT2(m), bad, corpus(1000), "x"); err == nil {
		t.Error("lr 0 accepted")
	}
}
