package train

import (
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
)

// Training with Recompute takes the same steps, bit for bit, as without; a run saved with it
// resumes without it and the other way round, still bit for bit.
func TestRecomputeTrainsAndResumesAlike(t *testing.T) {
	cfg := testConfig()
	straight := newTrainer(t, cfg)
	var want []StepStats
	for range 6 {
		s, err := straight.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	wantParams, err := straight.Model.StateParams()
	if err != nil {
		t.Fatal(err)
	}
	for _, saveWith := range []bool{true, false} {
		first := cfg
		first.Recompute = saveWith
		tr := newTrainer(t, first)
		for i := range 3 {
			s, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			if s.Loss != want[i].Loss || s.GradNorm != want[i].GradNorm {
				t.Fatalf("recompute %v, step %d: loss %v grad norm %v, want %v and %v", saveWith, i+1, s.Loss, s.GradNorm, want[i].Loss, want[i].GradNorm)
			}
		}
		path := filepath.Join(t.TempDir(), "ckpt.safetensors")
		if err := tr.Save(path); err != nil {
			t.Fatal(err)
		}
		st, err := checkpoint.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		second := cfg
		second.Recompute = !saveWith
		resumed := newTrainer(t, second)
		if err := resumed.Restore(st, path); err != nil {
			t.Fatal(err)
		}
		for i := 3; i < 6; i++ {
			s, err := resumed.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			if s.Loss != want[i].Loss || s.GradNorm != want[i].GradNorm {
				t.Fatalf("saved with recompute %v, resumed with %v, step %d: loss %v grad norm %v, want %v and %v",
					saveWith, !saveWith, i+1, s.Loss, s.GradNorm, want[i].Loss, want[i].GradNorm)
			}
		}
		got, err := resumed.Model.StateParams()
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(got, wantParams) {
			t.Fatalf("saved with recompute %v: the parameters after the resumed steps differ from a straight run's", saveWith)
		}
	}
}

// A Llama-family model, with every weight training or LoRA adapters, takes the same steps with
// Recompute, bit for bit.
func TestRecomputeTrainsLlamaAlike(t *testing.T) {
	for _, lora := range []bool{false, true} {
		var params [2][]float32
		var losses [2][]float32
		for i, recompute := range []bool{false, true} {
			cfg := testConfig()
			cfg.Recompute = recompute
			tr := newLlamaTrainer(t, cfg, lora)
			for range 3 {
				s, err := tr.TrainStep()
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], s.Loss, s.GradNorm)
			}
			p, err := tr.Model.StateParams()
			if err != nil {
				t.Fatal(err)
			}
			params[i] = p
		}
		if !sameBits(losses[0], losses[1]) {
			t.Fatalf("LoRA %v: losses and gradient norms %v with recompute, %v without", lora, losses[1], losses[0])
		}
		if !sameBits(params[0], params[1]) {
			t.Fatalf("LoRA %v: the parameters after 3 steps differ with recompute", lora)
		}
	}
}
