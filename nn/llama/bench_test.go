package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

// flopsPerToken is the matrix-product work of a training step per token: 6 per weight used
// (forward, and the two backward products), the lm head twice more for its recomputation,
// and attention's score and mix products (12 per layer per query head dim per position).
func flopsPerToken(c Config, T int) float64 {
	weights := float64(c.NumParams())
	head := float64(c.Vocab * c.Hidden)
	if c.TieEmbeddings {
		weights += head // the embedding is looked up, the head multiplied: count the product
	}
	weights -= float64(c.Vocab * c.Hidden) // the lookup itself is free
	attn := 12 * float64(c.Layers*c.Heads*c.HeadDim) * float64(T) / 2
	return 6*weights + 2*head + attn
}

// benchTrainStep measures forward, backward and AdamW on random tokens and reports tokens/s
// and the fraction of the FMA peak of the same threads, measured in the same process.
func benchTrainStep(b *testing.B, preset string, B, T int) {
	cfg, err := Preset(preset)
	if err != nil {
		b.Fatal(err)
	}
	be := cpu.New()
	m, err := New(be, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		b.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		b.Fatal(err)
	}
	opt, err := optim.NewAdamW(be, cfg.NumParams(), optim.AdamWConfig{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1})
	if err != nil {
		b.Fatal(err)
	}
	r := rng.New(2)
	in, tg := make([]int32, B*T), make([]int32, B*T)
	for i := range in {
		in[i], tg[i] = int32(r.Intn(cfg.Vocab)), int32(r.Intn(cfg.Vocab))
	}
	tp := autograd.NewTape()
	step := func() {
		m.ZeroGrad()
		if _, err := m.ForwardLoss(tp, in, tg, B, T); err != nil {
			b.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			b.Fatal(err)
		}
		opt.Update(m.Params, m.Grads, 1e-4)
	}
	step()
	b.ResetTimer()
	for range b.N {
		step()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.StopTimer()
	gflops := flopsPerToken(cfg, T) * float64(B*T) / sec / 1e9
	b.ReportMetric(float64(B*T)/sec, "tok/s")
	b.ReportMetric(gflops, "GFLOP/s")
	b.ReportMetric(gflops/gemm.PeakGFLOPS(0), "peak")
}

func BenchmarkTrainStepQwen3Tiny(b *testing.B) { benchTrainStep(b, "qwen3-tiny", 8, 64) }

func BenchmarkTrainStepQwen25_05B(b *testing.B) {
	if testing.Short() {
		b.Skip("a 0.5B step takes seconds")
	}
	benchTrainStep(b, "qwen2.5-0.5b", 4, 64)
}
