package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// presetRun is a one-layer Qwen3-shaped preset fine-tuned by sft on a built-in task: a run
// over GPT-2's tokenizer with no text data of its own.
func presetRun(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "sft")
	if o, err := runCLI("sft", "--preset", "qwen3-tiny", "--layers", "1", "--channels", "32", "--heads", "2", "--run-dir", dir,
		"--steps", "1", "--batch", "2", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--eval-size", "2",
		"--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"); err != nil {
		t.Fatalf("sft: %v\n%s", err, o)
	}
	return dir
}

// TestExportedPresetSamples: a preset run's export carries GPT-2's tokenizer as tokenizer.json,
// so vkgrad sample reads the directory, and exporting it again keeps the tokenizer.
func TestExportedPresetSamples(t *testing.T) {
	run := presetRun(t)
	out, again := filepath.Join(t.TempDir(), "export"), filepath.Join(t.TempDir(), "again")
	if o, err := runCLI("export", "--model", run, "--out", out); err != nil {
		t.Fatalf("export: %v\n%s", err, o)
	}
	if o, err := runCLI("export", "--model", out, "--out", again, "--dtype", "bfloat16"); err != nil {
		t.Fatalf("export of the export: %v\n%s", err, o)
	}
	for _, d := range []string{out, again} {
		if _, err := os.Stat(filepath.Join(d, "tokenizer.json")); err != nil {
			t.Fatalf("no tokenizer.json in the export: %v", err)
		}
		o, err := runCLI("sample", "--model", d, "--prompt", "Hello there", "--max-new-tokens", "4", "--device", "cpu", "-q")
		if err != nil || !strings.Contains(o, "Hello there") {
			t.Errorf("sample --model %s: %v\n%s", d, err, o)
		}
	}
}

// TestFaultEvalOfARunWithoutTextData: eval of an sft/grpo/ppo run needs --data (the run was
// trained on tasks, not a text corpus), and says so instead of reading a default corpus.
func TestFaultEvalOfARunWithoutTextData(t *testing.T) {
	run := presetRun(t)
	_, err := runCLI("eval", "--model", run, "--device", "cpu", "-q", "--cache-dir", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--data is required") || !strings.Contains(err.Error(), "sft run") {
		t.Fatalf("eval of an sft run without --data: %v", err)
	}
	text := filepath.Join(t.TempDir(), "text.txt")
	os.WriteFile(text, []byte(strings.Repeat("one two three four five six seven eight nine ten\n", 100)), 0o644)
	o, err := runCLI("eval", "--model", run, "--data", text, "--device", "cpu", "-q", "--cache-dir", t.TempDir())
	if err != nil || !strings.Contains(o, "perplexity") {
		t.Errorf("eval of an sft run with --data: %v\n%s", err, o)
	}
}
