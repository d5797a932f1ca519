package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/data"
)

// TestTrainPrecisionCLI: --precision is saved in config.json and kept by --resume (a different
// one is refused); an fp16 run logs its loss scale; an unknown one names the flag.
func TestTrainPrecisionCLI(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens.bin")
	toks := make([]int32, 20000)
	for i := range toks {
		toks[i] = int32((i*i + 3*i) % 499)
	}
	if err := data.WriteTokenFile(tokFile, toks); err != nil {
		t.Fatal(err)
	}
	common := []string{"--preset", "tiny", "--data", tokFile, "--batch", "2", "--seq", "16", "--sample-tokens", "0",
		"--device", "cpu", "-q", "--val-batches", "2", "--warmup", "2"}
	run := filepath.Join(dir, "fp16")
	if out, err := runCLI(append([]string{"train", "--steps", "4", "--stop-at", "2", "--precision", "fp16", "--run-dir", run}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(run, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta runMeta
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Train.Precision != "fp16" {
		t.Fatalf("config.json: %v, precision %q, want fp16", err, meta.Train.Precision)
	}
	if out, err := runCLI("train", "--resume", run, "--precision", "bf16", "--device", "cpu", "-q"); err == nil ||
		!strings.Contains(err.Error(), "--precision bf16: this run was saved with --precision fp16") {
		t.Fatalf("resuming an fp16 run in bf16: %v\n%s", err, out)
	}
	if out, err := runCLI("train", "--resume", run, "--sample-tokens", "0", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var scales []any
	for _, l := range metricLines(t, run, "train") {
		scales = append(scales, l["loss_scale"])
	}
	if len(scales) != 4 || scales[0] != 65536.0 || scales[3] != 65536.0 {
		t.Fatalf("loss_scale of the train lines: %v, want 65536 on each of 4 steps", scales)
	}
	_, err = runCLI(append([]string{"train", "--steps", "1", "--precision", "fp8", "--run-dir", filepath.Join(dir, "bad")}, common...)...)
	if err == nil || !strings.Contains(err.Error(), `--precision: unknown precision "fp8" (want fp32, bf16 or fp16)`) {
		t.Fatalf("--precision fp8: %v", err)
	}
}

// TestRLPrecisionRefusesFloat16: sft, grpo and ppo have no loss scaling, so fp16 is refused
// with the reason.
func TestRLPrecisionRefusesFloat16(t *testing.T) {
	_, err := runCLI("sft", "--precision", "fp16", "--steps", "1", "--device", "cpu", "-q", "--run-dir", filepath.Join(t.TempDir(), "sft"))
	if err == nil || !strings.Contains(err.Error(), "--precision fp16: sft, grpo and ppo do not scale the loss") {
		t.Fatalf("sft --precision fp16: %v", err)
	}
}
