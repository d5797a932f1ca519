package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

// benchTrainStep measures forward, backward and AdamW on random tokens and reports tokens/s
// and the fraction of the FMA peak of the same threads, measured in the same process.
func benchTrainStep(b *testing.B, preset string, B, T int) { benchStep(b, preset, B, T, nil) }

// benchStep is benchTrainStep, training LoRA adapters instead when lora is set. It reports the
// process's peak resident memory too: run one benchmark per process to read it.
func benchStep(b *testing.B, preset string, B, T int, lora *LoRAConfig) {
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
	if lora != nil {
		err = m.EnableLoRA(*lora, 1)
	} else {
		err = m.EnableGrads()
	}
	if err != nil {
		b.Fatal(err)
	}
	params, grads := m.Trainable()
	opt, err := optim.NewAdamW(params, optim.AdamWConfig{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1})
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
		m.ZeroTrainableGrads()
		if _, err := m.ForwardLoss(tp, in, tg, B, T); err != nil {
			b.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			b.Fatal(err)
		}
		opt.Update(params, grads, 1e-4)
	}
	step()
	b.ResetTimer()
	for range b.N {
		step()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.StopTimer()
	gflops := cfg.TrainFLOPsPerToken(T) * float64(B*T) / sec / 1e9
	b.ReportMetric(float64(B*T)/sec, "tok/s")
	b.ReportMetric(gflops, "GFLOP/s")
	b.ReportMetric(gflops/gemm.PeakGFLOPS(0), "peak")
	b.ReportMetric(float64(sysinfo.PeakRSS())/(1<<30), "GiB-peak-RSS")
}

func BenchmarkTrainStepQwen3Tiny(b *testing.B) { benchTrainStep(b, "qwen3-tiny", 8, 64) }

func BenchmarkTrainStepQwen25_05B_LoRA16(b *testing.B) {
	if testing.Short() {
		b.Skip("a 0.5B step takes seconds")
	}
	benchStep(b, "qwen2.5-0.5b", 4, 64, &LoRAConfig{Rank: 16, Alpha: 32})
}

func BenchmarkTrainStepQwen25_05B(b *testing.B) {
	if testing.Short() {
		b.Skip("a 0.5B step takes seconds")
	}
	benchTrainStep(b, "qwen2.5-0.5b", 4, 64)
}
