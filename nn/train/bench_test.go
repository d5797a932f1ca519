package train

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// benchTrainStep measures whole training steps (forward, backward, AdamW) after a warm-up step,
// reporting tokens/s; run with -benchmem for the steady-state allocations per step.
func benchTrainStep(b *testing.B, preset string, B, T int) {
	cfg, err := gpt2.Preset(preset)
	if err != nil {
		b.Fatal(err)
	}
	m, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		b.Fatal(err)
	}
	r := rng.New(2)
	tokens := make([]int32, 4*B*(T+1)+1)
	for i := range tokens {
		tokens[i] = int32(r.Intn(cfg.VocabSize))
	}
	tc := DefaultConfig()
	tc.Batch, tc.Seq, tc.Steps, tc.ValFraction = B, T, 1<<30, 0
	tr, err := New(nn.GPT2(m), tc, tokens, "random tokens")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tr.TrainStep(); err != nil { // warm-up: buffers and tape capacity
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.TrainStep(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(B*T*b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkTrainStepMini(b *testing.B) { benchTrainStep(b, "gpt2-mini", 8, 64) }

func BenchmarkTrainStep124M(b *testing.B) {
	if testing.Short() {
		b.Skip("124M step takes seconds")
	}
	benchTrainStep(b, "gpt2-124m", 4, 64)
}

// TestTrainStepAllocations pins the steady-state heap allocations of a step at zero.
func TestTrainStepAllocations(t *testing.T) {
	for _, recompute := range []bool{false, true} {
		m, err := gpt2.New(cpu.New(), testCfg)
		if err != nil {
			t.Fatal(err)
		}
		m.InitRandom(1)
		cfg := testConfig()
		cfg.Steps, cfg.Recompute = 1<<20, recompute
		tr, err := New(nn.GPT2(m), cfg, corpus(6000), "test corpus")
		if err != nil {
			t.Fatal(err)
		}
		tr.TrainStep()
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := tr.TrainStep(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("recompute %v: %v heap allocations per training step, want 0", recompute, allocs)
		}
	}
}
