package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
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

// A Llama-family model has no recompute: asking for it is refused, naming the field.
func TestRecomputeRefusedForLlama(t *testing.T) {
	cfg := testConfig()
	cfg.Recompute = true
	m, err := llama.Load(cpu.New(), "../llama/testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(nn.Llama(m), cfg, make([]int32, 6000), "test stream")
	if err == nil || !strings.Contains(err.Error(), "recompute") {
		t.Fatalf("recompute for a Llama-family model: %v", err)
	}
}
