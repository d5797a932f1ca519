package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
)

// A model in a Hugging Face cache laid out as huggingface_hub lays it out is used by name, with
// no network: sampled, fine-tuned with sft and grpo, and exported.
func TestModelByNameFromTheHuggingFaceCache(t *testing.T) {
	model := chatModel(t)
	files, err := hubtest.ReadDir(model)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	snap, err := hubtest.Store(cache, "org/tiny-qwen3", "main", files)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1")
	ask := []string{"--chat", "What is 2+2?", "-n", "4", "--temperature", "0", "--device", "cpu"}
	byName, err := runCLI(append([]string{"sample", "--model", "org/tiny-qwen3"}, ask...)...)
	if err != nil {
		t.Fatalf("sample --model org/tiny-qwen3: %v\n%s", err, byName)
	}
	byDir, _ := runCLI(append([]string{"sample", "--model", model}, ask...)...)
	if firstLine(byName) == "" || firstLine(byName) != firstLine(byDir) {
		t.Errorf("by name %q, by directory %q: want the same greedy sample", byName, byDir)
	}
	if o, err := runCLI(append([]string{"sample", "--model", "org/tiny-qwen3", "--revision", filepath.Base(snap)}, ask...)...); err != nil {
		t.Errorf("--revision <commit>: %v\n%s", err, o)
	}

	dir := t.TempDir()
	data := writeChatDataset(t, dir)
	common := []string{"--device", "cpu", "-q", "--dataset", data, "--eval-size", "2", "--held-out-share", "0.25", "--steps", "1"}
	if o, err := runCLI(append([]string{"sft", "--init", "org/tiny-qwen3", "--run-dir", filepath.Join(dir, "sft"), "--batch", "2", "--stop-at-accuracy", "0"}, common...)...); err != nil {
		t.Fatalf("sft --init org/tiny-qwen3: %v\n%s", err, o)
	}
	if o, err := runCLI(append([]string{"grpo", "--init", "org/tiny-qwen3", "--run-dir", filepath.Join(dir, "grpo"), "--prompts", "2", "--group-size", "2",
		"--max-new-tokens", "2", "--reward", "exact:1"}, common...)...); err != nil {
		t.Fatalf("grpo --init org/tiny-qwen3: %v\n%s", err, o)
	}
	out := filepath.Join(dir, "export")
	if o, err := runCLI("export", "--model", "org/tiny-qwen3", "--out", out); err != nil {
		t.Fatalf("export --model org/tiny-qwen3: %v\n%s", err, o)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
}

// A name missing from the cache offline, an unknown revision, and --revision beside a local
// path each fail saying why.
func TestFaultModelByNameErrors(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
	_, err := runCLI("sample", "--model", "org/absent", "--prompt", "x", "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "--model org/absent") || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("a model missing offline: %v", err)
	}
	_, err = runCLI("export", "--model", "org/absent", "--revision", "v2", "--out", filepath.Join(cache, "x"))
	if err == nil || !strings.Contains(err.Error(), "refs/v2") {
		t.Errorf("an unknown revision offline: %v", err)
	}
	local := chatModel(t)
	_, err = runCLI("export", "--model", local, "--revision", "v2", "--out", filepath.Join(cache, "y"))
	if err == nil || !strings.Contains(err.Error(), "--revision v2") {
		t.Errorf("--revision with a local directory: %v", err)
	}
}
