package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

func TestTrainDryRunAndMemoryCheck(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI("train", "--preset", "gpt2-124m", "--batch", "4", "--seq", "1024", "--dry-run", "--device", "cpu", "--run-dir", filepath.Join(dir, "dry"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"training at B=4 T=1024", "parameters 474.8 MiB", "AdamW 949.7 MiB", "activations", "total"} {
		if !strings.Contains(out, want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dry")); !os.IsNotExist(err) {
		t.Errorf("--dry-run created its run directory (%v)", err)
	}
	_, err = runCLI("train", "--preset", "gpt2-124m", "--batch", "100000", "--seq", "64", "--device", "cpu", "--run-dir", filepath.Join(dir, "big"))
	if err == nil || !strings.Contains(err.Error(), "--batch 100000") || !strings.Contains(err.Error(), "available") || !strings.Contains(err.Error(), "fits") {
		t.Errorf("a batch far beyond memory: %v", err)
	}
	_, err = runCLI("train", "--preset", "qwen3-tiny", "--batch", "100000", "--seq", "1024", "--device", "cpu", "--run-dir", filepath.Join(dir, "big-qwen"))
	if err == nil || !strings.Contains(err.Error(), "--batch 100000") || !strings.Contains(err.Error(), "fits") {
		t.Errorf("a Llama-family batch far beyond memory: %v", err)
	}
}

func TestSampleCountBeyondMemory(t *testing.T) {
	model := tinySFT(t, t.TempDir())
	_, err := runCLI("sample", "--model", model, "--count", "1000000000", "-n", "4", "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "--count 1000000000 needs") || !strings.Contains(err.Error(), "fits") {
		t.Errorf("a billion samples: %v", err)
	}
}

// A batch whose logits alone would exceed the device's largest allocation is laid out, not
// refused: the training head runs in chunks of rows, so no tensor holds them (--dry-run; it
// may still refuse the batch for the memory available, never for an allocation).
func TestTrainBatchBeyondLargestAllocation(t *testing.T) {
	vb := testutil.Vulkan(t)
	const T, Vp = 1024, 50304 // gpt2-124m's padded vocabulary
	limit := vb.MaxAllocElems()
	B := limit/(T*Vp) + 2 // logits of B*T rows of Vp floats do not fit one allocation
	if B > 64 {
		t.Skipf("%s allocates %d floats at once: the batch that exceeds it is too large to try", vb.Name(), limit)
	}
	out, err := runCLI("train", "--preset", "gpt2-124m", "--batch", strconv.Itoa(B), "--seq", strconv.Itoa(T), "--device", "vulkan:0",
		"--dry-run", "--run-dir", filepath.Join(t.TempDir(), "big"))
	if err != nil && (strings.Contains(err.Error(), "largest allocation") || !strings.Contains(err.Error(), "available")) {
		t.Fatalf("logits beyond the largest allocation: %v\n%s", err, out)
	}
	if err == nil && !strings.Contains(out, fmt.Sprintf("training at B=%d T=%d", B, T)) {
		t.Errorf("--dry-run printed no footprint:\n%s", out)
	}
}

// grpo and ppo --dry-run print the run's footprint, the reference and the rollout's decoder
// among it, and create no run directory; --micro-batch shrinks the activations.
func TestRLDryRun(t *testing.T) {
	dir := t.TempDir()
	model := tinySFT(t, dir)
	activations := map[string]string{}
	for _, args := range [][]string{
		{"grpo", "--group-size", "4"},
		{"grpo", "--group-size", "4", "--micro-batch", "2"},
		{"ppo"},
	} {
		runDir := filepath.Join(dir, "dry-"+args[0])
		full := append(args, "--init", model, "--prompts", "4", "--max-new-tokens", "8", "--beta", "0.05", "--dry-run", "--device", "cpu", "-q", "--run-dir", runDir)
		if args[0] == "ppo" {
			full = append(args, "--init", model, "--prompts", "4", "--max-new-tokens", "8", "--dry-run", "--device", "cpu", "-q", "--run-dir", runDir)
		}
		out, err := runCLI(full...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, want := range []string{"memory on cpu", "parameters", "reference", "activations", "lm head", "rollout decoder", "total"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v --dry-run output lacks %q:\n%s", args, want, out)
			}
		}
		if _, err := os.Stat(runDir); !os.IsNotExist(err) {
			t.Errorf("%v --dry-run created its run directory (%v)", args, err)
		}
		_, rest, _ := strings.Cut(out, "activations ")
		activations[strings.Join(args, " ")], _, _ = strings.Cut(rest, ",")
	}
	if whole, micro := activations["grpo --group-size 4"], activations["grpo --group-size 4 --micro-batch 2"]; whole == micro {
		t.Errorf("activations %s with --micro-batch 2 and %s without: want fewer", micro, whole)
	}
}
