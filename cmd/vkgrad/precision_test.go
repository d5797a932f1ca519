package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
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

// TestRLPrecision: sft trains in bf16, saves it in config.json and keeps it on --resume (a
// different one is refused); sft and grpo train in fp16 with the loss scaled, logging the
// scale, and a resumed fp16 run continues from its saved scale.
func TestRLPrecision(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--device", "cpu", "-q", "--eval-size", "4"}
	fp16 := filepath.Join(dir, "fp16")
	if out, err := runCLI(append([]string{"sft", "--precision", "fp16", "--run-dir", fp16, "--steps", "3", "--stop-at", "2", "--batch", "4",
		"--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, common...)...); err != nil {
		t.Fatalf("sft --precision fp16: %v\n%s", err, out)
	}
	if out, err := runCLI(append([]string{"sft", "--resume", fp16}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, l := range metricLines(t, fp16, "sft") {
		if l["loss_scale"] != float64(train.InitialLossScale) {
			t.Fatalf("fp16 sft step line %d: loss_scale %v, want %v", i, l["loss_scale"], train.InitialLossScale)
		}
	}
	grpo := filepath.Join(dir, "grpo")
	if out, err := runCLI(append([]string{"grpo", "--init", fp16, "--precision", "fp16", "--run-dir", grpo, "--steps", "1", "--prompts", "2", "--group-size", "2",
		"--max-new-tokens", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, common...)...); err != nil {
		t.Fatalf("grpo --precision fp16: %v\n%s", err, out)
	}
	if l := metricLines(t, grpo, "grpo"); len(l) != 1 || l[0]["loss_scale"] != float64(train.InitialLossScale) {
		t.Fatalf("fp16 grpo step lines %v: want one with loss_scale %v", l, train.InitialLossScale)
	}
	sft := filepath.Join(dir, "sft")
	out, err := runCLI(append([]string{"sft", "--precision", "bf16", "--run-dir", sft, "--steps", "3", "--stop-at", "2", "--batch", "4",
		"--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, common...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(sft, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta rlrun.RunMeta
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Precision != "bf16" {
		t.Fatalf("sft config.json: %v, precision %q, want bf16", err, meta.Precision)
	}
	if _, err := runCLI(append([]string{"sft", "--resume", sft, "--precision", "fp32"}, common...)...); err == nil ||
		!strings.Contains(err.Error(), "--precision fp32: the run was made with --precision bf16") {
		t.Fatalf("resuming a bf16 sft run in fp32: %v", err)
	}
	if out, err := runCLI(append([]string{"sft", "--resume", sft}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := len(metricLines(t, sft, "sft")); n != 3 {
		t.Fatalf("the resumed bf16 sft run wrote %d step lines, want 3", n)
	}
}

// fp32Device is a device without 16-bit products.
type fp32Device struct{ tensor.Backend }

// TestSetPrecisionNamesFlagAndDevice: a device that cannot round its products refuses bf16 and
// fp16 naming the flag and itself, and takes fp32.
func TestSetPrecisionNamesFlagAndDevice(t *testing.T) {
	be := fp32Device{cpu.NewWithThreads(1)}
	for _, p := range []string{"bf16", "fp16"} {
		_, err := precision.Set(be, p)
		if want := "--precision " + p + ": device cpu computes its matrix products in fp32 only, not " + p; err == nil || err.Error() != want {
			t.Errorf("%s on a float32-only device: %v, want %q", p, err, want)
		}
	}
	if p, err := precision.Set(be, "fp32"); err != nil || p != tensor.FP32 {
		t.Errorf("fp32 on a float32-only device: %v, %v", p, err)
	}
	rounding := cpu.NewWithThreads(1)
	if _, err := precision.Set(rounding, "fp16"); err != nil || rounding.ProductPrecision() != tensor.FP16 {
		t.Errorf("fp16 on the CPU: %v, precision now %v", err, rounding.ProductPrecision())
	}
}
