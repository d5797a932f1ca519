package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// chatModel writes a small random Qwen3 with the real Qwen3 tokenizer and chat template.
func chatModel(t *testing.T) string {
	t.Helper()
	tokDir := filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer")
	cfg, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Vocab, cfg.Hidden, cfg.Intermediate, cfg.Layers = 151669, 16, 32, 1
	cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.EOS = 2, 1, 8, []int{151645}
	m, err := llama.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "qwen3")
	if err := m.Export(dir, "float32"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tokDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSampleAndTokenizeAHuggingFaceDirectory: sample --chat renders the question in the
// model's template and generates; tokenize --model uses its tokenizer.
func TestSampleAndTokenizeAHuggingFaceDirectory(t *testing.T) {
	dir := chatModel(t)
	out, err := runCLI("sample", "--model", dir, "--chat", "What is 2+2?", "-n", "6", "--temperature", "0", "--device", "cpu")
	if err != nil {
		t.Fatalf("sample --chat: %v\n%s", err, out)
	}
	again, _ := runCLI("sample", "--model", dir, "--chat", "What is 2+2?", "-n", "6", "--temperature", "0", "--device", "cpu")
	if strings.TrimSpace(out) == "" || firstLine(out) != firstLine(again) {
		t.Errorf("greedy chat samples %q and %q should be equal and not empty", out, again)
	}
	out, err = runCLI("tokenize", "--model", dir, "Hello world<|im_end|>")
	if err != nil || strings.TrimSpace(out) != "9707 1879 151645" {
		t.Errorf("tokenize --model: %q, %v", out, err)
	}
	if _, err := runCLI("sample", "--model", dir, "--chat", "hi", "--device", "cpu", "-n", "2", "--top-p", "2"); err == nil {
		t.Error("bad sampling options should be refused")
	}
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, " INF ") && strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}
