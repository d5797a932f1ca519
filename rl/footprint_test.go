package rl

import (
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// longRowsPolicy is a narrow GPT-2 with long rows: a whole batch of them lays out more
// activations than minPassBudget, its parameters next to nothing.
func longRowsPolicy(t *testing.T) nn.LM {
	t.Helper()
	m, err := gpt2.New(cpu.New(), gpt2.Config{NumLayers: 2, NumHeads: 2, Channels: 64, MaxSeqLen: 1024, VocabSize: 4000, PaddedVocabSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return nn.GPT2(m)
}

// AutoMicroBatch takes the most rows whose pass fits the budget (here minPassBudget: the
// state is small), and with it a pass's memory (activations and lm head) stays the same
// however many rows a step samples, while the whole batch's grows with them.
func TestAutoMicroBatchBoundsThePass(t *testing.T) {
	p := longRowsPolicy(t)
	cfg := DefaultTrainConfig()
	cfg.Rollout.MaxNewTokens = 24
	const prompt = 1000
	pass := func(rows, micro int) Footprint {
		c := cfg
		c.MicroBatch = micro
		f, err := EstimateFootprint(p, c, rows, prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	n, err := AutoMicroBatch(p, cfg, 64, prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if in, over := pass(64, n), pass(64, n+1); n < 1 || n >= 64 || in.Activations+in.Head > minPassBudget || over.Activations+over.Head <= minPassBudget {
		t.Fatalf("auto micro-batch %d: its pass %d bytes, one more row's %d, budget %d", n, in.Activations+in.Head, over.Activations+over.Head, minPassBudget)
	}
	small, large := pass(64, MicroBatchAuto), pass(256, MicroBatchAuto)
	if small.PassRows != n || large.PassRows != n || small.Activations != large.Activations || small.Head != large.Head {
		t.Errorf("auto passes of 64 rows: %v; of 256: %v", small, large)
	}
	if whole := pass(256, 0); whole.Activations < 4*large.Activations {
		t.Errorf("whole batch of 256 rows: activations %d, auto passes %d", whole.Activations, large.Activations)
	}
	// The decoder's turn and the passes' never overlap: the total counts the larger.
	if want := large.Params + large.Grads + large.Optimizer + large.Reference + max(large.Activations+large.Head, large.Decoder); large.Total() != want {
		t.Errorf("total %d, want %d", large.Total(), want)
	}
	// A small model's whole batch fits the budget: one pass, as MicroBatch 0.
	if n, err := AutoMicroBatch(p, cfg, 2, 8, true); err != nil || n != 2 {
		t.Errorf("2 short rows: auto micro-batch %d (%v), want 2", n, err)
	}
}

// TestFootprintCountsDecoderWeightCopies checks that in bf16 on the CPU the decoder's share
// holds its bfloat16 weight copies: two bytes for each weight a decoding step multiplies.
func TestFootprintCountsDecoderWeightCopies(t *testing.T) {
	p := longRowsPolicy(t)
	cfg := DefaultTrainConfig()
	cfg.Rollout.MaxNewTokens = 24
	estimate := func(prec tensor.Precision) Footprint {
		if err := tensor.SetProductPrecision(p.Backend(), prec); err != nil {
			t.Fatal(err)
		}
		f, err := EstimateFootprint(p, cfg, 8, 100, false)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fp32, bf16 := estimate(tensor.FP32), estimate(tensor.BF16)
	if _, ok := tensor.HalfWeightsFor(p.Backend()); !ok {
		t.Skip("this build's CPU kernel reads no bfloat16 weights in place (purego or arm64)")
	}
	// 2 layers of 12·64² weights and the lm head's 4096·64.
	if got, want := bf16.Decoder-fp32.Decoder, int64(2*(2*12*64*64+4096*64)); got != want {
		t.Fatalf("bf16 decoder %d bytes, fp32 %d: copies of %d bytes, want %d", bf16.Decoder, fp32.Decoder, got, want)
	}
}
