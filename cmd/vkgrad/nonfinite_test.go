package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
)

// poisoned writes a copy of the model at src with its whole token embedding set to v.
func poisoned(t *testing.T, src string, v float32) string {
	t.Helper()
	l, err := load.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Config.VocabSize * l.Config.Channels {
		l.Params[i] = v
	}
	out := filepath.Join(t.TempDir(), "poisoned.safetensors")
	if err := checkpoint.Save(out, &checkpoint.State{Config: l.Config, Params: l.Params}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFaultNonFiniteModelThroughCommands: sampling, GRPO and training from a model whose
// weights hold NaN or Inf fail with an error about non-finite values, never a panic or a
// made-up token; and a run directory's checkpoint is not replaced.
func TestFaultNonFiniteModelThroughCommands(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	good, err := os.ReadFile(filepath.Join(sft, load.RunCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		bad := poisoned(t, filepath.Join(sft, load.RunCheckpoint), v)
		for _, temp := range []string{"0", "1"} {
			out, err := runCLI("sample", "--model", bad, "-n", "3", "--temperature", temp, "--device", "cpu")
			if err == nil || !strings.Contains(err.Error(), "logit") {
				t.Errorf("sample %v at temperature %s: %v\n%s", v, temp, err, out)
			}
		}
		out, err := runCLI(append([]string{"grpo", "--init", bad, "--steps", "1", "--prompts", "2", "--group-size", "2",
			"--run-dir", filepath.Join(dir, "grpo"), "--eval-size", "0"}, rlCommon...)...)
		if err == nil || !strings.Contains(err.Error(), "logit") {
			t.Errorf("grpo from %v weights: %v\n%s", v, err, out)
		}
	}
	// The SFT run's checkpoint was only read.
	if now, _ := os.ReadFile(filepath.Join(sft, load.RunCheckpoint)); string(now) != string(good) {
		t.Error("the initial run's checkpoint changed")
	}
}
