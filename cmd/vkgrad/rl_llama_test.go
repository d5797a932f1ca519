package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// writeChatDataset writes a small conversational dataset: questions as messages, answers to
// check.
func writeChatDataset(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for i, q := range []string{"2+3", "4+4", "1+6", "5+2", "3+3", "2+2", "7+1", "6+3"} {
		line, _ := json.Marshal(map[string]any{
			"messages": []map[string]string{{"role": "user", "content": "What is " + q + "?"}},
			"answer":   []string{"5", "8", "7", "7", "6", "4", "8", "9"}[i],
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, "sums.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A Qwen3 Hugging Face directory fine-tunes end to end from the CLI: sft on a conversational
// dataset (rendered in the model's chat template), grpo from that run with a verifier, stopped
// and resumed, then exported back to a Hugging Face directory that samples with its tokenizer.
func TestSFTThenGRPOOnAQwenDirectory(t *testing.T) {
	model := chatModel(t)
	dir := t.TempDir()
	data := writeChatDataset(t, dir)
	sft, grpo, out := filepath.Join(dir, "sft"), filepath.Join(dir, "grpo"), filepath.Join(dir, "export")
	common := []string{"--device", "cpu", "-q", "--dataset", data, "--eval-size", "2", "--held-out-share", "0.25"}
	if o, err := runCLI(append([]string{"sft", "--init", model, "--run-dir", sft, "--steps", "2", "--batch", "2", "--stop-at-accuracy", "0"}, common...)...); err != nil {
		t.Fatalf("sft: %v\n%s", err, o)
	}
	var meta rlrun.RunMeta
	raw, _ := os.ReadFile(filepath.Join(sft, "config.json"))
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Llama == nil || meta.HFDir == "" || meta.Model != nil {
		t.Fatalf("sft config.json: %s (%v)", raw, err)
	}
	grpoArgs := append([]string{"grpo", "--init", sft, "--run-dir", grpo, "--steps", "2", "--prompts", "2", "--group-size", "2",
		"--max-new-tokens", "4", "--reward", "exact:1,length:0.1", "--target-length", "2", "--log-completions", "3"}, common...)
	if o, err := runCLI(append(grpoArgs, "--stop-at", "1")...); err != nil {
		t.Fatalf("grpo: %v\n%s", err, o)
	}
	if o, err := runCLI("grpo", "--resume", grpo, "--device", "cpu", "-q"); err != nil {
		t.Fatalf("grpo --resume: %v\n%s", err, o)
	}
	st, err := checkpoint.Load(filepath.Join(grpo, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Llama == nil || st.Step != 2 {
		t.Fatalf("grpo checkpoint: Llama config %v, step %d; want a Llama-family model at step 2", st.Llama != nil, st.Step)
	}
	steps := metricLines(t, grpo, "grpo")
	if len(steps) != 2 {
		t.Fatalf("grpo wrote %d step lines over the stop and resume, want 2", len(steps))
	}
	// 2 prompts a step from a training split of n of the dataset's 8 lines: epoch 2/n, then 4/n.
	e1, _ := steps[0]["epoch"].(float64)
	e2, _ := steps[1]["epoch"].(float64)
	n := 2 / e1
	if n != math.Trunc(n) || n < 1 || n > 8 || e2 != 4/n {
		t.Errorf("epochs %v, %v after 1 and 2 steps of 2 prompts; want 2/n and 4/n for a training split of n ≤ 8", steps[0]["epoch"], steps[1]["epoch"])
	}
	raw, err = os.ReadFile(filepath.Join(grpo, "completions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var last struct {
		Step       int                `json:"step"`
		Prompt     string             `json:"prompt"`
		Completion *string            `json:"completion"`
		Reward     *float64           `json:"reward"`
		Rewards    map[string]float64 `json:"rewards"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 6 || last.Step != 2 || !strings.Contains(last.Prompt, "<|im_start|>user") || last.Completion == nil || last.Reward == nil || len(last.Rewards) != 2 {
		t.Fatalf("completions.jsonl: %d lines (want 3 a step over 2 steps), the last %s", len(lines), lines[len(lines)-1])
	}
	if o, err := runCLI("export", "--model", grpo, "--out", out); err != nil {
		t.Fatalf("export: %v\n%s", err, o)
	}
	if o, err := runCLI("sample", "--model", out, "--chat", "What is 2+3?", "-n", "4", "--temperature", "0", "--device", "cpu"); err != nil {
		t.Fatalf("sample of the exported run: %v\n%s", err, o)
	}
	if o, err := runCLI("grpo", "--init", model, "--run-dir", filepath.Join(dir, "builtin"), "--device", "cpu", "-q"); err == nil || !strings.Contains(err.Error(), "--dataset") {
		t.Errorf("grpo on a built-in task with a Qwen model: %v\n%s", err, o)
	}
}

// A Qwen-shaped preset trains without any download: sft makes a random Qwen3 over GPT-2's
// tokenizer on a built-in task, and grpo continues it from the run directory.
func TestQwenPresetOnABuiltInTask(t *testing.T) {
	dir := t.TempDir()
	sft, grpo := filepath.Join(dir, "sft"), filepath.Join(dir, "grpo")
	common := []string{"--device", "cpu", "-q", "--eval-size", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}
	if o, err := runCLI(append([]string{"sft", "--preset", "qwen3-tiny", "--layers", "1", "--channels", "32", "--heads", "2",
		"--run-dir", sft, "--steps", "2", "--batch", "4", "--stop-at-accuracy", "0"}, common...)...); err != nil {
		t.Fatalf("sft: %v\n%s", err, o)
	}
	if o, err := runCLI(append([]string{"grpo", "--init", sft, "--run-dir", grpo, "--steps", "2", "--prompts", "2", "--group-size", "2"}, common...)...); err != nil {
		t.Fatalf("grpo: %v\n%s", err, o)
	}
	st, err := checkpoint.Peek(filepath.Join(grpo, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Llama == nil || st.Llama.Architecture != "Qwen3ForCausalLM" || st.Llama.Layers != 1 || st.Llama.HeadDim != 16 {
		t.Fatalf("grpo checkpoint model: %+v", st.Llama)
	}
	if o, err := runCLI("sft", "--preset", "qwen3-tiny", "--channels", "33", "--heads", "2", "--run-dir", filepath.Join(dir, "bad"), "--device", "cpu", "-q"); err == nil || !strings.Contains(err.Error(), "--channels 33") {
		t.Errorf("an odd --channels: %v\n%s", err, o)
	}
}

// --lora-rank trains adapters of a Qwen directory: the checkpoint holds them, a resume refuses
// another rank, and export merges them into a plain Hugging Face directory.
func TestGRPOWithLoRAOnAQwenDirectory(t *testing.T) {
	model := chatModel(t)
	dir := t.TempDir()
	data := writeChatDataset(t, dir)
	run, out := filepath.Join(dir, "grpo"), filepath.Join(dir, "merged")
	args := []string{"grpo", "--init", model, "--run-dir", run, "--steps", "2", "--prompts", "2", "--group-size", "2",
		"--max-new-tokens", "3", "--lora-rank", "4", "--device", "cpu", "-q", "--dataset", data, "--eval-size", "0"}
	if o, err := runCLI(append(args, "--stop-at", "1")...); err != nil {
		t.Fatalf("grpo --lora-rank: %v\n%s", err, o)
	}
	if _, err := runCLI("grpo", "--resume", run, "--lora-rank", "8", "--device", "cpu", "-q"); err == nil || !strings.Contains(err.Error(), "--lora-rank 4") {
		t.Errorf("a resume with another rank: %v", err)
	}
	if o, err := runCLI("grpo", "--resume", run, "--device", "cpu", "-q"); err != nil {
		t.Fatalf("grpo --resume: %v\n%s", err, o)
	}
	st, err := checkpoint.Peek(filepath.Join(run, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if st.LoRA == nil || st.LoRA.Rank != 4 || st.LoRA.Alpha != 8 || st.Step != 2 {
		t.Fatalf("checkpoint LoRA %+v at step %d", st.LoRA, st.Step)
	}
	if o, err := runCLI("export", "--model", run, "--out", out); err != nil {
		t.Fatalf("export: %v\n%s", err, o)
	}
	if o, err := runCLI("sample", "--model", out, "--chat", "What is 2+3?", "-n", "3", "--temperature", "0", "--device", "cpu"); err != nil {
		t.Fatalf("sample of the merged export: %v\n%s", err, o)
	}
	if _, err := runCLI("grpo", "--init", model, "--run-dir", filepath.Join(dir, "bad"), "--lora-rank", "-1", "--device", "cpu", "-q", "--dataset", data); err == nil {
		t.Error("--lora-rank -1 was accepted")
	}
}

// A Qwen-shaped preset over GPT-2's tokenizer renders a conversational dataset in its family's
// ChatML, through sft and a grpo continuing it; a GPT-2, without a chat template, trains on it
// in plain text.
func TestQwenPresetOnAChatDataset(t *testing.T) {
	dir := t.TempDir()
	data := writeChatDataset(t, dir)
	sft, grpo := filepath.Join(dir, "sft"), filepath.Join(dir, "grpo")
	common := []string{"--device", "cpu", "-q", "--dataset", data, "--eval-size", "2", "--held-out-share", "0.25"}
	if o, err := runCLI(append([]string{"sft", "--preset", "qwen3-tiny", "--layers", "1", "--channels", "32", "--heads", "2",
		"--run-dir", sft, "--steps", "2", "--batch", "2", "--stop-at-accuracy", "0"}, common...)...); err != nil {
		t.Fatalf("sft: %v\n%s", err, o)
	}
	if o, err := runCLI(append([]string{"grpo", "--init", sft, "--run-dir", grpo, "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "3"}, common...)...); err != nil {
		t.Fatalf("grpo: %v\n%s", err, o)
	}
	// A GPT-2 has no chat template: it reads the conversation as its episodes write one.
	if o, err := runCLI(append([]string{"sft", "--preset", "gpt2-micro", "--run-dir", filepath.Join(dir, "gpt2"), "--steps", "1", "--stop-at-accuracy", "0"}, common...)...); err != nil {
		t.Errorf("a GPT-2 on a conversational dataset: %v\n%s", err, o)
	}
}

// eval measures a Qwen directory on text tokenised with its own tokenizer (a 152k vocabulary:
// the token cache holds 32-bit tokens): a random model's loss is about ln(vocabulary).
func TestEvalAQwenDirectory(t *testing.T) {
	model := chatModel(t)
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var losses []float64
	for range 2 { // the second run reads the token cache
		out, err := runCLI("eval", "--model", model, "--data", text, "--seq", "16", "--batch", "2", "--device", "cpu", "--cache-dir", cache)
		if err != nil {
			t.Fatalf("eval: %v\n%s", err, out)
		}
		var loss, ppl float64
		i := strings.Index(out, "loss ")
		if i < 0 {
			t.Fatalf("no loss in %q", out)
		}
		if _, err := fmt.Sscanf(out[i:], "loss %f, perplexity %f", &loss, &ppl); err != nil {
			t.Fatalf("%q: %v", out[i:], err)
		}
		losses = append(losses, loss)
	}
	if want := math.Log(151669); math.Abs(losses[0]-want) > 0.05 || losses[1] != losses[0] {
		t.Errorf("losses %v, want about ln(151669) = %.3f both times", losses, want)
	}
	out, err := runCLI("eval", "--model", model, "--data", text, "--seq", "16", "--batch", "2", "--batches", "3", "--device", "cpu", "--cache-dir", cache)
	if err != nil || !strings.Contains(out, "the first 3 of") || !strings.Contains(out, "96 tokens in 3 batches of 2x16") {
		t.Errorf("eval --batches 3 says %q (%v)", out, err)
	}
	if _, err := runCLI("eval", "--model", model, "--device", "cpu"); err == nil || !strings.Contains(err.Error(), "--data is required") {
		t.Errorf("eval without --data: %v", err)
	}
}

// train continues pretraining a Qwen directory on text in its own tokenizer: stopped, resumed,
// and evaluated from its run directory; --preset qwen3-tiny trains a random one over GPT-2's.
func TestTrainAQwenDirectory(t *testing.T) {
	model := chatModel(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	common := []string{"--device", "cpu", "-q", "--cache-dir", filepath.Join(dir, "cache")}
	if o, err := runCLI(append([]string{"train", "--init", model, "--data", text, "--steps", "4", "--batch", "2", "--seq", "16",
		"--val-fraction", "0.2", "--run-dir", run, "--stop-at", "2"}, common...)...); err != nil {
		t.Fatalf("train: %v\n%s", err, o)
	}
	if o, err := runCLI(append([]string{"train", "--resume", run}, common...)...); err != nil {
		t.Fatalf("train --resume: %v\n%s", err, o)
	}
	st, err := checkpoint.Peek(filepath.Join(run, "checkpoint.safetensors"))
	if err != nil || st.Llama == nil || st.Step != 4 {
		t.Fatalf("checkpoint %v at step %v: %v", st != nil && st.Llama != nil, st.Step, err)
	}
	if o, err := runCLI(append([]string{"eval", "--model", run}, common...)...); err != nil || !strings.Contains(o, "validation split") {
		t.Fatalf("eval of the run: %v\n%s", err, o)
	}
	if o, err := runCLI(append([]string{"train", "--preset", "qwen3-tiny", "--data", text, "--steps", "1", "--batch", "2", "--seq", "16",
		"--val-fraction", "0.2", "--run-dir", filepath.Join(dir, "preset")}, common...)...); err != nil {
		t.Fatalf("train --preset qwen3-tiny: %v\n%s", err, o)
	}
}

// train --dry-run prints a Llama-family run's memory, the estimate nn/llama makes.
func TestTrainDryRunLlama(t *testing.T) {
	out, err := runCLI("train", "--preset", "qwen3-tiny", "--batch", "2", "--seq", "32", "--dry-run", "--device", "cpu", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg, _ := llama.Preset("qwen3-tiny")
	f, err := llama.EstimateFootprint(cpu.New(), cfg, 2, 32, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "total " + tensor.HumanBytes(f.Total()); !strings.Contains(out, want) || !strings.Contains(out, "activations") {
		t.Errorf("dry run %q lacks %q", out, want)
	}
}

// A real model's preset over GPT-2's tokenizer (Qwen2.5's 151,936 rows) gets the tokenizer's
// vocabulary and EOS, so it never samples a token without text.
func TestLargeVocabularyPresetTakesTheTokenizers(t *testing.T) {
	run := filepath.Join(t.TempDir(), "sft")
	if o, err := runCLI("sft", "--preset", "qwen2.5-0.5b", "--layers", "1", "--channels", "64", "--heads", "2", "--steps", "1", "--batch", "2",
		"--stop-at-accuracy", "0", "--eval-size", "4", "--device", "cpu", "-q", "--run-dir", run); err != nil {
		t.Fatalf("sft: %v\n%s", err, o)
	}
	st, err := checkpoint.Peek(filepath.Join(run, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Llama == nil || st.Llama.Vocab != gpt2.GPT2Vocab || len(st.Llama.EOS) != 1 || st.Llama.EOS[0] != gpt2.GPT2Vocab-1 {
		t.Errorf("model: %+v", st.Llama)
	}
}
