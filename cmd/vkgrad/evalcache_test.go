package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl"
)

// evalKeyParts is an eval cache key with its task and adapter settings typed, to change them.
type evalKeyParts struct {
	key   rlrun.EvalKey
	tasks rlrun.Tasks
	lora  rlrun.LoRA
}

func (p evalKeyParts) hash(t *testing.T) string {
	t.Helper()
	p.key.Tasks, p.key.LoRA = p.tasks, p.lora
	h, err := p.key.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func baseEvalKey() evalKeyParts {
	return evalKeyParts{tasks: rlrun.DefaultTasks(), key: rlrun.EvalKey{Format: rlrun.EvalKeyFormat, Version: "v1", Binary: "b", Model: "m", Device: "cpu", EOS: 50256, Vocab: 50257,
		Temperature: 1, HeldOut: []rlrun.HeldOutID{{Text: "1 + 2 =", Tokens: []int32{1, 2, 3}, Answer: " 3", Meta: map[string]string{"task": "addition"}}}}}
}

// Changing any component of the key names another entry.
func TestEvalCacheKeyCoversEveryComponent(t *testing.T) {
	changes := map[string]func(p *evalKeyParts){
		"version":      func(p *evalKeyParts) { p.key.Version = "v2" },
		"binary":       func(p *evalKeyParts) { p.key.Binary = "c" },
		"model":        func(p *evalKeyParts) { p.key.Model = "n" },
		"lora":         func(p *evalKeyParts) { p.lora.Rank = 8 },
		"device":       func(p *evalKeyParts) { p.key.Device = "vulkan:0" },
		"precision":    func(p *evalKeyParts) { p.key.Precision = "bf16" },
		"eos":          func(p *evalKeyParts) { p.key.EOS = 0 },
		"vocab":        func(p *evalKeyParts) { p.key.Vocab = 50304 },
		"temperature":  func(p *evalKeyParts) { p.key.Temperature = 0.7 },
		"eval size":    func(p *evalKeyParts) { p.tasks.EvalSize = 100 },
		"eval seed":    func(p *evalKeyParts) { p.tasks.EvalSeed = 1 },
		"answer len":   func(p *evalKeyParts) { p.tasks.EvalMax = 9 },
		"samples":      func(p *evalKeyParts) { p.tasks.EvalSamples = 1 },
		"eval batch":   func(p *evalKeyParts) { p.tasks.EvalBatch = 64 },
		"task":         func(p *evalKeyParts) { p.tasks.Spec = "reverse" },
		"credit":       func(p *evalKeyParts) { p.tasks.Options.Addition.PartialCredit = true },
		"reward":       func(p *evalKeyParts) { p.tasks.Data.Reward = "exact" },
		"prompt":       func(p *evalKeyParts) { p.key.HeldOut[0].Text = "1 + 3 =" },
		"tokens":       func(p *evalKeyParts) { p.key.HeldOut[0].Tokens = []int32{1, 2, 4} },
		"answer":       func(p *evalKeyParts) { p.key.HeldOut[0].Answer = " 4" },
		"meta":         func(p *evalKeyParts) { p.key.HeldOut[0].Meta = map[string]string{"task": "addition", "answer": "3"} },
		"more prompts": func(p *evalKeyParts) { p.key.HeldOut = append(p.key.HeldOut, p.key.HeldOut[0]) },
	}
	want := baseEvalKey().hash(t)
	if again := baseEvalKey().hash(t); again != want {
		t.Fatalf("one key hashes to %s and %s", want, again)
	}
	for name, change := range changes {
		p := baseEvalKey()
		change(&p)
		if got := p.hash(t); got == want {
			t.Errorf("changing the %s leaves the key %s", name, got)
		}
	}
}

// A key hashes as it always has, so the entries earlier builds cached are found (the hash
// below is the one vkgrad computed before the key's type left this package).
func TestEvalCacheKeyHashIsStable(t *testing.T) {
	p := baseEvalKey()
	p.key.Precision, p.lora.Rank = "bf16", 4
	if got, want := p.hash(t), "53c7a37fcd881c4610bd7c36ea42071bafdfb8a938dca52deb4bf842a2b42d36"; got != want {
		t.Fatalf("key hash %s, want %s", got, want)
	}
}

// A second grpo run from the same --init reads the figure before training from the cache (an
// entry planted with another accuracy shows it is read, not measured); --no-eval-cache and
// other evaluation settings measure it again.
func TestGRPOReadsTheCachedAccuracyBeforeTraining(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	sft := filepath.Join(dir, "sft")
	task := []string{"--device", "cpu", "-q", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}
	common := append([]string{"--eval-size", "4", "--eval-samples", "1"}, task...)
	if out, err := runCLI(append([]string{"sft", "--run-dir", sft, "--steps", "1", "--batch", "4", "--eval-size", "0"}, task...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before := func(name string, extra ...string) map[string]any {
		t.Helper()
		run := filepath.Join(dir, name)
		args := append([]string{"grpo", "--init", sft, "--run-dir", run, "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "4"}, common...)
		if out, err := runCLI(append(args, extra...)...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return metricLines(t, run, "eval")[0]
	}
	cacheDir, err := rlrun.EvalCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	entries := func() []string {
		m, _ := filepath.Glob(filepath.Join(cacheDir, "*.json"))
		return m
	}
	first := before("g1")
	if n := len(entries()); n != 1 {
		t.Fatalf("%d cache entries after the first run, want 1", n)
	}
	if second := before("g2"); !reflect.DeepEqual(first["accuracy"], second["accuracy"]) || !reflect.DeepEqual(first["sampled_accuracy"], second["sampled_accuracy"]) {
		t.Fatalf("before training: %v then %v", first, second)
	}
	// Plant another figure under the same key: the next run reports it, so it read the cache.
	path := entries()[0]
	var e struct{ Result *rl.EvalResult }
	raw, _ := os.ReadFile(path)
	if err := json.Unmarshal(raw, &e); err != nil || e.Result == nil {
		t.Fatalf("%s: %v", path, err)
	}
	planted := e.Result.Accuracy + 0.25
	if planted > 1 {
		planted -= 0.5
	}
	e.Result.Accuracy = planted
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSuffix(filepath.Base(path), ".json")
	c := &rlrun.EvalCache{Dir: cacheDir, Log: zerolog.Nop()}
	if _, err := c.Get(key, e.Result.N, func() (*rl.EvalResult, error) { return e.Result, nil }); err != nil {
		t.Fatal(err)
	}
	if got := before("g3"); got["accuracy"] != planted {
		t.Fatalf("accuracy before training %v, want the cached %v", got["accuracy"], planted)
	}
	if got := before("g4", "--no-eval-cache"); got["accuracy"] != first["accuracy"] {
		t.Fatalf("--no-eval-cache: accuracy %v, want the measured %v", got["accuracy"], first["accuracy"])
	}
	before("g5", "--eval-max-new-tokens", "5")
	if n := len(entries()); n != 2 {
		t.Fatalf("%d cache entries after a run with another answer length, want 2", n)
	}
}
