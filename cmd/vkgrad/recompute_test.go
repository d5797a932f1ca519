package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// dryRunActivations runs train --dry-run with args and returns the activations it prints, in
// GiB, and whether it marks them as recomputed.
func dryRunActivations(t *testing.T, args ...string) (gib float64, recompute bool) {
	t.Helper()
	out, err := runCLI(append([]string{"train", "--preset", "gpt2-124m", "--batch", "8", "--seq", "1024", "--dry-run", "--device", "cpu",
		"--run-dir", filepath.Join(t.TempDir(), "dry")}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(out, "activations ")
	num, unit, _ := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(unit, "GiB") {
		t.Fatalf("no activations in GiB in:\n%s", out)
	}
	if gib, err = strconv.ParseFloat(num, 64); err != nil {
		t.Fatalf("activations %q: %v", num, err)
	}
	return gib, strings.Contains(out, "(recompute)")
}

// --dry-run --recompute prints activations smaller by every layer's but one ln1, ln2 (C floats
// a token each) and GELU output (4C): 11*6*768 floats a token for GPT-2 124M, 1.547 GiB at
// B=8 T=1024. The printed sizes are rounded to 0.01 GiB.
func TestTrainDryRunRecompute(t *testing.T) {
	cfg, err := gpt2.Preset("gpt2-124m")
	if err != nil {
		t.Fatal(err)
	}
	want := float64(4*(cfg.NumLayers-1)*6*cfg.Channels*8*1024) / (1 << 30)
	plain, marked := dryRunActivations(t)
	if marked {
		t.Error("--dry-run without --recompute says recompute")
	}
	rc, marked := dryRunActivations(t, "--recompute")
	if !marked {
		t.Error("--dry-run --recompute does not say recompute")
	}
	if got := plain - rc; math.Abs(got-want) > 0.011 {
		t.Errorf("--recompute saves %.2f GiB of activations (%.2f against %.2f), want %.3f", got, rc, plain, want)
	}
	if bf16, _ := dryRunActivations(t, "--recompute", "--precision", "bf16"); bf16 != rc {
		t.Errorf("--recompute with bf16 products: %.2f GiB of activations, with fp32 %.2f", bf16, rc)
	}
}

// A run saved with --recompute resumes with its choice unless --recompute is given again, with
// either value, and ends bit for bit where a run without it does.
func TestTrainResumeAcrossRecompute(t *testing.T) {
	dir := t.TempDir()
	straight, split := filepath.Join(dir, "straight"), filepath.Join(dir, "split")
	args := trainArgs(t, straight, "--steps", "4")
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	args = slices.Clone(args)
	args[slices.Index(args, "--run-dir")+1] = split
	if out, err := runCLI(append(args, "--stop-at", "2", "--recompute")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	savedRecompute := func() bool {
		raw, err := os.ReadFile(filepath.Join(split, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(raw), `"recompute": true`)
	}
	if !savedRecompute() {
		t.Fatal("config.json of a --recompute run does not say so")
	}
	if out, err := runCLI("train", "--resume", split, "--stop-at", "3", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !savedRecompute() {
		t.Error("a resume without --recompute dropped the run's --recompute")
	}
	if out, err := runCLI("train", "--resume", split, "--recompute=false", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if savedRecompute() {
		t.Error("a resume with --recompute=false kept recomputing")
	}
	a, err := checkpoint.Load(filepath.Join(straight, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := checkpoint.Load(filepath.Join(split, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != 4 || b.Step != 4 {
		t.Fatalf("steps %d and %d, want 4", a.Step, b.Step)
	}
	for i := range a.Params {
		if math.Float32bits(a.Params[i]) != math.Float32bits(b.Params[i]) || a.AdamM[i] != b.AdamM[i] || a.AdamV[i] != b.AdamV[i] {
			t.Fatalf("parameter %d differs between the straight run and the one resumed across --recompute", i)
		}
	}
}

// --recompute is refused for a Llama-family model, naming the flag, in train and in bench train.
func TestRecomputeRefusedForLlama(t *testing.T) {
	_, err := runCLI("train", "--preset", "qwen3-tiny", "--recompute", "--dry-run", "--device", "cpu", "--run-dir", filepath.Join(t.TempDir(), "q"))
	if err == nil || !strings.Contains(err.Error(), "--recompute") {
		t.Errorf("train --recompute of a Llama-family preset: %v", err)
	}
	_, err = runCLI("bench", "train", "--preset", "qwen3-tiny", "--recompute", "--device", "cpu", "-q")
	if err == nil || !strings.Contains(err.Error(), "--recompute") {
		t.Errorf("bench train --recompute of a Llama-family preset: %v", err)
	}
}

// bench train --recompute says so in its report.
func TestBenchTrainRecompute(t *testing.T) {
	out, err := runCLI("bench", "train", "--preset", "tiny", "--batch", "2", "--seq", "16", "--steps", "1", "--recompute", "--device", "cpu", "-q")
	if err != nil || !strings.Contains(out, ", recompute") {
		t.Fatalf("bench train --recompute: %v\n%s", err, out)
	}
}
