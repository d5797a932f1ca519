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
	"github.com/vkgrad/vkgrad/nn/llama"
)

// dryRunActivations runs train --dry-run of preset at B=8 with args and returns the
// activations it prints, in MiB, and whether it marks them as recomputed.
func dryRunActivations(t *testing.T, preset string, T int, args ...string) (mib float64, recompute bool) {
	t.Helper()
	out, err := runCLI(append([]string{"train", "--preset", preset, "--batch", "8", "--seq", strconv.Itoa(T), "--dry-run", "--device", "cpu",
		"--run-dir", filepath.Join(t.TempDir(), "dry")}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(out, "activations ")
	num, unit, _ := strings.Cut(rest, " ")
	scale := map[string]float64{"GiB": 1024, "MiB": 1}[unit[:min(3, len(unit))]]
	if !ok || scale == 0 {
		t.Fatalf("no activations in MiB or GiB in:\n%s", out)
	}
	if mib, err = strconv.ParseFloat(num, 64); err != nil {
		t.Fatalf("activations %q: %v", num, err)
	}
	return mib * scale, strings.Contains(out, "(recompute)")
}

// --dry-run --recompute prints activations smaller by every layer's but one ln1, ln2 (C floats
// a token each) and GELU output (4C): 11*6*768 floats a token for GPT-2 124M, 1584 MiB at
// B=8 T=1024; for a Llama-family model its two norms' outputs (2*Hidden) and SwiGLU product
// (Intermediate). The printed sizes are rounded to 0.01 GiB or 0.1 MiB.
func TestTrainDryRunRecompute(t *testing.T) {
	cfg, err := gpt2.Preset("gpt2-124m")
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		preset    string
		T         int
		want, tol float64 // MiB
	}{
		{"gpt2-124m", 1024, float64(4*(cfg.NumLayers-1)*6*cfg.Channels*8*1024) / (1 << 20), 11},
		{"qwen3-tiny", 256, float64(4*(qwen.Layers-1)*(2*qwen.Hidden+qwen.Intermediate)*8*256) / (1 << 20), 0.11},
	} {
		plain, marked := dryRunActivations(t, c.preset, c.T)
		if marked {
			t.Errorf("%s: --dry-run without --recompute says recompute", c.preset)
		}
		rc, marked := dryRunActivations(t, c.preset, c.T, "--recompute")
		if !marked {
			t.Errorf("%s: --dry-run --recompute does not say recompute", c.preset)
		}
		if got := plain - rc; math.Abs(got-c.want) > c.tol {
			t.Errorf("%s: --recompute saves %.1f MiB of activations (%.1f against %.1f), want %.1f", c.preset, got, rc, plain, c.want)
		}
	}
	rc, _ := dryRunActivations(t, "gpt2-124m", 1024, "--recompute")
	if bf16, _ := dryRunActivations(t, "gpt2-124m", 1024, "--recompute", "--precision", "bf16"); bf16 != rc {
		t.Errorf("--recompute with bf16 products: %.1f MiB of activations, with fp32 %.1f", bf16, rc)
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

// bench train --recompute says so in its report, for either family.
func TestBenchTrainRecompute(t *testing.T) {
	for _, preset := range []string{"tiny", "qwen3-tiny"} {
		out, err := runCLI("bench", "train", "--preset", preset, "--batch", "2", "--seq", "16", "--steps", "1", "--recompute", "--device", "cpu", "-q")
		if err != nil || !strings.Contains(out, ", recompute") {
			t.Fatalf("bench train --preset %s --recompute: %v\n%s", preset, err, out)
		}
	}
}
