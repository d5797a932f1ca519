package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// paddedChatModel is a tiny random Qwen3 over the real Qwen3 tokenizer (151669 ids) with the
// 151936 rows Qwen configs declare, the padding rows made large so that a sampler that does not
// mask them draws one at once.
func paddedChatModel(t *testing.T) string {
	t.Helper()
	cfg, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	const tokens = 151669
	cfg.Vocab, cfg.Hidden, cfg.Intermediate, cfg.Layers = 151936, 16, 32, 1
	cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.EOS = 2, 1, 8, []int{151645}
	m, err := llama.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Params.ToHost()
	emb := cfg.ParamSpecs()[0]
	for i := tokens * cfg.Hidden; i < emb.Numel(); i++ {
		p[emb.Offset+i] = float32(math.Sin(float64(i))) * 20
	}
	if err := m.Params.Upload(p); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "qwen3")
	if err := m.Export(dir, "float32"); err != nil {
		t.Fatal(err)
	}
	tokDir := filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer")
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

// TestFaultPaddedVocabularyGRPO: grpo on a Qwen3 directory whose vocabulary is padded past its
// tokenizer's ids says once that the policy covers the tokenizer's ids, and trains (a padding
// id drawn used to end the run at the first step); sample draws among the tokenizer's ids too.
func TestFaultPaddedVocabularyGRPO(t *testing.T) {
	model := paddedChatModel(t)
	dir := t.TempDir()
	data := writeChatDataset(t, dir)
	var out string
	var err error
	log := stderrOf(t, func() {
		out, err = runCLI("grpo", "--init", model, "--run-dir", filepath.Join(dir, "grpo"), "--device", "cpu", "--dataset", data,
			"--eval-size", "2", "--held-out-share", "0.25", "--steps", "1", "--prompts", "2", "--group-size", "2",
			"--max-new-tokens", "4", "--reward", "numeric")
	})
	if err != nil {
		t.Fatalf("grpo: %v\n%s%s", err, out, log)
	}
	if n := strings.Count(log, "padded past its tokenizer's"); n != 1 {
		t.Errorf("grpo said %d times that the vocabulary is padded, want once:\n%s", n, log)
	}
	if out, err = runCLI("sample", "--model", model, "--prompt", "Hello", "-n", "4", "--device", "cpu"); err != nil {
		t.Fatalf("sample: %v\n%s", err, out)
	}
}

// stderrOf runs f with the process's standard error, where the commands log, sent to a file,
// and returns what was written there.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	saved := os.Stderr
	os.Stderr = tmp
	defer func() { os.Stderr = saved }()
	f()
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
