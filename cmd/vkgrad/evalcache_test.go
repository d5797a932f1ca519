package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/rl"
)

func sampleEvalResult() *rl.EvalResult {
	t := rl.EvalTask{N: 4, Accuracy: 0.25, AccuracySE: 0.2165, MeanReward: 0.4, SampledAccuracy: 0.125}
	return &rl.EvalResult{EvalTask: t, ByTask: map[string]rl.EvalTask{"addition": t}}
}

// The second lookup of a key reads the figure the first measured, without measuring; the file
// is written with the umask's permissions.
func TestEvalCacheMeasuresOnce(t *testing.T) {
	var logs bytes.Buffer
	c := &evalCache{dir: t.TempDir(), log: zerolog.New(&logs)}
	measured := 0
	measure := func() (*rl.EvalResult, error) { measured++; return sampleEvalResult(), nil }
	first, err := c.get("k1", 4, measure)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.get("k1", 4, measure)
	if err != nil {
		t.Fatal(err)
	}
	if measured != 1 || !reflect.DeepEqual(first, second) {
		t.Fatalf("measured %d times; results %+v and %+v", measured, first, second)
	}
	if !strings.Contains(logs.String(), "from the cache") {
		t.Errorf("no log line says the figure came from the cache: %s", logs.String())
	}
	if _, err := c.get("k2", 4, measure); err != nil || measured != 2 {
		t.Fatalf("another key: measured %d times, err %v; want a second measurement", measured, err)
	}
	st, err := os.Stat(filepath.Join(c.dir, "k1.json"))
	if err != nil {
		t.Fatal(err)
	}
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	if want := os.FileMode(0o666 &^ mask); st.Mode().Perm() != want {
		t.Errorf("entry mode %v, want %v (0666 less the umask)", st.Mode().Perm(), want)
	}
}

// A damaged entry (cut short, edited without its checksum, under another key's name, or with
// impossible numbers) is measured again with a warning, and replaced.
func TestFaultEvalCacheCorruptEntryNotTrusted(t *testing.T) {
	good := sampleEvalResult()
	bad := sampleEvalResult()
	bad.Accuracy = 1.5
	damage := map[string]func(path string) error{
		"truncated": func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, b[:len(b)/2], 0o644)
		},
		"edited": func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, bytes.Replace(b, []byte(`"accuracy": 0.25`), []byte(`"accuracy": 0.75`), 1), 0o644)
		},
		"other key":  func(p string) error { return writeEvalEntry(p, "k9", good) },
		"impossible": func(p string) error { return writeEvalEntry(p, "k1", bad) },
		"not json":   func(p string) error { return os.WriteFile(p, []byte{0, 1, 2}, 0o644) },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			c := &evalCache{dir: t.TempDir(), log: zerolog.New(&logs)}
			measured := 0
			measure := func() (*rl.EvalResult, error) { measured++; return sampleEvalResult(), nil }
			if _, err := c.get("k1", 4, measure); err != nil {
				t.Fatal(err)
			}
			if err := f(filepath.Join(c.dir, "k1.json")); err != nil {
				t.Fatal(err)
			}
			got, err := c.get("k1", 4, measure)
			if err != nil {
				t.Fatal(err)
			}
			if measured != 2 || !reflect.DeepEqual(got, good) || !strings.Contains(logs.String(), "ignoring the cached") {
				t.Fatalf("measured %d times, got %+v; log %s", measured, got, logs.String())
			}
			if _, err := readEvalEntry(filepath.Join(c.dir, "k1.json"), "k1", 4); err != nil {
				t.Fatalf("the entry was not replaced by a good one: %v", err)
			}
		})
	}
	// A result on another number of problems is not this held-out set's.
	c := &evalCache{dir: t.TempDir(), log: zerolog.Nop()}
	if err := writeEvalEntry(filepath.Join(c.dir, "k1.json"), "k1", good); err != nil {
		t.Fatal(err)
	}
	if _, err := readEvalEntry(filepath.Join(c.dir, "k1.json"), "k1", 5); err == nil {
		t.Fatal("a result on 4 problems was accepted for 5")
	}
}

// Changing any component of the key names another entry.
func TestEvalCacheKeyCoversEveryComponent(t *testing.T) {
	base := func() evalCacheKey {
		return evalCacheKey{Format: evalCacheFormat, Version: "v1", Binary: "b", Model: "m", Device: "cpu", EOS: 50256, Vocab: 50257,
			Tasks: defaultTaskFlags(), Temperature: 1,
			HeldOut: []heldOutID{{Text: "1 + 2 =", Tokens: []int32{1, 2, 3}, Answer: " 3", Meta: map[string]string{"task": "addition"}}}}
	}
	changes := map[string]func(k *evalCacheKey){
		"version":      func(k *evalCacheKey) { k.Version = "v2" },
		"binary":       func(k *evalCacheKey) { k.Binary = "c" },
		"model":        func(k *evalCacheKey) { k.Model = "n" },
		"lora":         func(k *evalCacheKey) { k.LoRA.Rank = 8 },
		"device":       func(k *evalCacheKey) { k.Device = "vulkan:0" },
		"eos":          func(k *evalCacheKey) { k.EOS = 0 },
		"vocab":        func(k *evalCacheKey) { k.Vocab = 50304 },
		"temperature":  func(k *evalCacheKey) { k.Temperature = 0.7 },
		"eval size":    func(k *evalCacheKey) { k.Tasks.EvalSize = 100 },
		"eval seed":    func(k *evalCacheKey) { k.Tasks.EvalSeed = 1 },
		"answer len":   func(k *evalCacheKey) { k.Tasks.EvalMax = 9 },
		"samples":      func(k *evalCacheKey) { k.Tasks.EvalSamples = 1 },
		"eval batch":   func(k *evalCacheKey) { k.Tasks.EvalBatch = 64 },
		"task":         func(k *evalCacheKey) { k.Tasks.Spec = "reverse" },
		"credit":       func(k *evalCacheKey) { k.Tasks.Options.Addition.PartialCredit = true },
		"reward":       func(k *evalCacheKey) { k.Tasks.Data.Reward = "exact" },
		"prompt":       func(k *evalCacheKey) { k.HeldOut[0].Text = "1 + 3 =" },
		"tokens":       func(k *evalCacheKey) { k.HeldOut[0].Tokens = []int32{1, 2, 4} },
		"answer":       func(k *evalCacheKey) { k.HeldOut[0].Answer = " 4" },
		"meta":         func(k *evalCacheKey) { k.HeldOut[0].Meta = map[string]string{"task": "addition", "answer": "3"} },
		"more prompts": func(k *evalCacheKey) { k.HeldOut = append(k.HeldOut, k.HeldOut[0]) },
	}
	want, err := base().hash()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := base().hash(); again != want {
		t.Fatalf("one key hashes to %s and %s", want, again)
	}
	for name, change := range changes {
		k := base()
		change(&k)
		if got, _ := k.hash(); got == want {
			t.Errorf("changing the %s leaves the key %s", name, got)
		}
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
	cacheDir, err := evalCacheDir()
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
	var e evalCacheEntry
	raw, _ := os.ReadFile(path)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	planted := e.Result.Accuracy + 0.25
	if planted > 1 {
		planted -= 0.5
	}
	e.Result.Accuracy = planted
	if err := writeEvalEntry(path, e.Key, e.Result); err != nil {
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
