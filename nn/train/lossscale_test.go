package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestLossScalePowerOfTwoIsExact: in float32 a power-of-two loss scale, divided out again,
// changes no bit of the weights, in one batch and over micro-batches (where the division is
// folded into the mean's 1/K).
func TestLossScalePowerOfTwoIsExact(t *testing.T) {
	for _, micro := range []int{1, 3} {
		cfg := testConfig()
		cfg.MicroBatches = micro
		plain, scaled := newTrainer(t, cfg), newTrainer(t, cfg)
		scaled.Scaler = &LossScaler{Scale: 1 << 10}
		trainSteps(t, plain, 4)
		for i := range 4 {
			s, err := scaled.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			if s.Skipped || s.LossScale != 1<<10 || s.Metrics()["loss_scale"] != 1<<10 {
				t.Fatalf("micro-batches %d, step %d: %+v, want an applied step at loss scale 1024", micro, i+1, s)
			}
		}
		if !sameBits(hostCopy(t, plain.Model.Params()), hostCopy(t, scaled.Model.Params())) {
			t.Fatalf("micro-batches %d: weights trained at loss scale 1024 differ from unscaled training", micro)
		}
		if _, ok := (StepStats{Loss: 1}).Metrics()["loss_scale"]; ok {
			t.Fatal("a run without loss scaling logs loss_scale")
		}
	}
}

// TestLossScaleOverflowSkipsAndHalves: in fp16 a scale far too large overflows the gradient;
// each such step leaves the weights and the moments alone and halves the scale, without
// counting towards --max-skips, until a scale that fits trains.
func TestLossScaleOverflowSkipsAndHalves(t *testing.T) {
	cfg := testConfig()
	cfg.Precision = "fp16"
	tr := newTrainer(t, cfg)
	tr.Scaler.Scale = 1 << 40
	params, m := hostCopy(t, tr.Model.Params()), hostCopy(t, tr.Opt.M)
	s, err := tr.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Skipped || s.LossScale != 1<<40 || tr.Scaler.Scale != 1<<39 || s.Reason != "gradient norm NaN at loss scale 2^40; the scale is now 2^39" {
		t.Fatalf("step at loss scale 2^40: %+v, scale now %v; want a skipped step and the scale halved", s, tr.Scaler.Scale)
	}
	if !sameBits(params, hostCopy(t, tr.Model.Params())) || !sameBits(m, hostCopy(t, tr.Opt.M)) || tr.Step != 0 || tr.Opt.Step != 0 {
		t.Fatal("an overflowed step changed the weights, the moments or the step count")
	}
	skips := 1
	for tr.Step == 0 {
		was := tr.Scaler.Scale
		s, err := tr.TrainStep()
		if err != nil {
			t.Fatalf("after %d overflows: %v", skips, err)
		}
		if s.Skipped {
			skips++
			if tr.Scaler.Scale != was/2 {
				t.Fatalf("overflow %d: scale %v, want %v", skips, tr.Scaler.Scale, was/2)
			}
		}
	}
	if skips <= DefaultMaxSkips || tr.Skipped != skips || tr.Scaler.GoodSteps != 1 {
		t.Fatalf("%d overflows before a step trained (Skipped %d, good steps %d); want more than %d, all counted",
			skips, tr.Skipped, tr.Scaler.GoodSteps, DefaultMaxSkips)
	}
	t.Logf("%d overflows from 2^40 before scale %v trained", skips, tr.Scaler.Scale)
}

// TestLossScaleDoublesAfterGoodSteps: GrowthInterval finite steps in a row double the scale.
func TestLossScaleDoublesAfterGoodSteps(t *testing.T) {
	cfg := testConfig()
	cfg.Precision = "fp16"
	tr := newTrainer(t, cfg)
	if *tr.Scaler != (LossScaler{Scale: InitialLossScale, GrowthInterval: LossScaleGrowthInterval}) {
		t.Fatalf("fp16 starts with %+v, want scale 2^16 doubling every 2000 steps", *tr.Scaler)
	}
	tr.Scaler.Scale, tr.Scaler.GrowthInterval = 8, 3
	var scales []float32
	for range 7 {
		s, err := tr.TrainStep()
		if err != nil || s.Skipped {
			t.Fatalf("%+v, %v", s, err)
		}
		scales = append(scales, s.LossScale)
	}
	want := []float32{8, 8, 8, 16, 16, 16, 32}
	for i := range want {
		if scales[i] != want[i] {
			t.Fatalf("loss scales %v, want %v", scales, want)
		}
	}
}

func TestLossScalerUpdate(t *testing.T) {
	s := LossScaler{Scale: 2, GrowthInterval: 2}
	s.Update(true)
	s.Update(false) // resets the count
	s.Update(false) // and never goes below 1
	if s.Scale != MinLossScale || s.GoodSteps != 0 {
		t.Fatalf("after an overflow at 2 and one at 1: %+v, want scale 1", s)
	}
	s.Update(true)
	s.Update(true)
	if s.Scale != 2 || s.GoodSteps != 0 {
		t.Fatalf("after 2 good steps: %+v, want scale 2", s)
	}
	s = LossScaler{Scale: MaxLossScale, GrowthInterval: 1}
	s.Update(true)
	if s.Scale != MaxLossScale {
		t.Fatalf("doubling the largest scale gave %v", s.Scale)
	}
}

// TestResumeKeepsLossScale: a resumed fp16 run continues with the saved scale and count, and
// trains the same bits as one that never stopped.
func TestResumeKeepsLossScale(t *testing.T) {
	cfg := testConfig()
	cfg.Precision = "fp16"
	straight := newTrainer(t, cfg)
	straight.Scaler.GrowthInterval = 4
	want := trainSteps(t, straight, 6)

	first := newTrainer(t, cfg)
	first.Scaler.GrowthInterval = 4
	trainSteps(t, first, 3)
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	second := newTrainer(t, cfg)
	second.Scaler.GrowthInterval = 4
	if err := second.Restore(st, path); err != nil {
		t.Fatal(err)
	}
	if *second.Scaler != *first.Scaler {
		t.Fatalf("restored scaler %+v, saved %+v", *second.Scaler, *first.Scaler)
	}
	got := trainSteps(t, second, 3)
	for i := range got {
		if got[i] != want[3+i] {
			t.Fatalf("step %d: resumed loss %v, straight %v", 4+i, got[i], want[3+i])
		}
	}
	if straight.Scaler.Scale != 2*InitialLossScale || *second.Scaler != *straight.Scaler {
		t.Fatalf("scaler after 6 steps: resumed %+v, straight %+v; want one doubling", *second.Scaler, *straight.Scaler)
	}
	st.Optimizer.Extra[extraLossScale] = 3
	if err := newTrainer(t, cfg).Restore(st, path); err == nil || !strings.Contains(err.Error(), "not a power of two") {
		t.Fatalf("a checkpoint with loss scale 3: %v", err)
	}
}

// fp32Only is a backend without 16-bit products.
type fp32Only struct{ tensor.Backend }

func TestPrecisionConfigErrors(t *testing.T) {
	cfg := testConfig()
	cfg.Precision = "fp8"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `precision: unknown precision "fp8"`) {
		t.Fatalf("precision fp8: %v", err)
	}
	m, err := gpt2.New(fp32Only{cpu.New()}, testCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Precision = "bf16"
	_, err = New(nn.GPT2(m), cfg, corpus(6000), "test corpus")
	if err == nil || err.Error() != "precision bf16: cpu computes its matrix products in fp32 only, not bf16" {
		t.Fatalf("bf16 on a backend without it: %v", err)
	}
	cfg.Precision = "fp32"
	if _, err := New(nn.GPT2(m), cfg, corpus(6000), "test corpus"); err != nil {
		t.Fatalf("fp32 on a backend without 16-bit products: %v", err)
	}
}

// TestReducedPrecisionTracksFloat32: ten steps in bf16 and fp16 end within a stated distance
// of float32's loss, and not at the same bits (the products did round).
func TestReducedPrecisionTracksFloat32(t *testing.T) {
	cfg := testConfig()
	ref := trainSteps(t, newTrainer(t, cfg), 10)
	for _, c := range []struct {
		prec string
		tol  float64
	}{{"bf16", 0.005}, {"fp16", 0.001}} {
		cfg.Precision = c.prec
		got := trainSteps(t, newTrainer(t, cfg), 10)
		rel := float64(got[9]/ref[9] - 1)
		t.Logf("%s: final loss %v, fp32 %v (%+.4f%%)", c.prec, got[9], ref[9], 100*rel)
		if got[9] == ref[9] || rel > c.tol || rel < -c.tol {
			t.Errorf("%s: loss after 10 steps %v, fp32 %v: want different bits within %.1f%%", c.prec, got[9], ref[9], 100*c.tol)
		}
	}
}

// TestLlamaLossScaleIsExact: a Llama-family model's loss head seeds the scaled gradient too; a
// power-of-two scale changes no bit of the weights, with and without LoRA.
func TestLlamaLossScaleIsExact(t *testing.T) {
	for _, lora := range []bool{false, true} {
		cfg := testConfig()
		plain, scaled := newLlamaTrainer(t, cfg, lora), newLlamaTrainer(t, cfg, lora)
		scaled.Scaler = &LossScaler{Scale: 1 << 12}
		trainSteps(t, plain, 3)
		trainSteps(t, scaled, 3)
		if !sameBits(hostCopy(t, plain.Model.Params()), hostCopy(t, scaled.Model.Params())) {
			t.Fatalf("lora %v: weights trained at loss scale 4096 differ from unscaled training", lora)
		}
		// Unscaled, the same scale would be visible: the seed really is multiplied.
		scaled.Scaler = nil
		scaled.Model.(nn.LossScaler).SetLossScale(1 << 12)
		s, err := scaled.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		ref, err := plain.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if ratio := s.GradNorm / ref.GradNorm; ratio < 4000 || ratio > 4200 {
			t.Fatalf("lora %v: gradient norm %v with the seed scaled by 4096 and not unscaled, %v without: ratio %v", lora, s.GradNorm, ref.GradNorm, ratio)
		}
	}
}
