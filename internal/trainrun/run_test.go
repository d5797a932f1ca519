package trainrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/sample"
)

// Check refuses negative cadences and a bad training setting, naming the flag, and makes the
// paths absolute.
func TestCheck(t *testing.T) {
	c := DefaultConfig()
	c.StopAt = -1
	if err := c.Check(); err == nil || err.Error() != "--val-every, --save-every, --stop-at and --sample-tokens must be >= 0" {
		t.Errorf("--stop-at -1: %v", err)
	}
	c = DefaultConfig()
	c.Train.Batch = 0
	if err := c.Check(); err == nil || !strings.HasPrefix(err.Error(), "--batch") {
		t.Errorf("--batch 0: %v", err)
	}
	c = DefaultConfig()
	c.Data.Path, c.Init = "corpus.txt", "model.bin"
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err != nil || c.Data.Path != filepath.Join(wd, "corpus.txt") || c.Init != filepath.Join(wd, "model.bin") {
		t.Errorf("relative paths: %v, data %q, init %q", err, c.Data.Path, c.Init)
	}
}

// testEnv is a run's environment on the CPU, its results printed to out; the end-of-run sample
// says what it was asked.
func testEnv(out *bytes.Buffer) Env {
	return Env{Device: "cpu", Log: zerolog.Nop(), Out: out,
		Generate: func(m *gpt2.Model, runDir, prompt string, n int, opt sample.Options, seed uint64) (string, error) {
			return fmt.Sprintf("%s + %d tokens at T=%g, seed %d", prompt, n, opt.Temperature, seed), nil
		},
	}
}

// tinyRun is a run of the tiny GPT-2 over a token file in dir, to pause at step 2 of 4.
func tinyRun(t *testing.T, dir string) Config {
	t.Helper()
	tokens := make([]int32, 20000)
	for i := range tokens {
		tokens[i] = int32((i*i + 3*i) % 499)
	}
	tokFile := filepath.Join(dir, "tokens.bin")
	if err := data.WriteTokenFile(tokFile, tokens); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Preset, c.Data.Path, c.RunDir, c.CacheDir, c.ReportTo = "tiny", tokFile, filepath.Join(dir, "run"), t.TempDir(), []string{"jsonl"}
	c.Train.Batch, c.Train.Seq, c.Train.Steps, c.Train.ValBatches, c.Train.Warmup = 2, 16, 4, 2, 2
	c.StopAt, c.Loop.SamplePrompt, c.Loop.SampleTokens = 2, "Hi", 5
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	return c
}

// A run paused at step 2 writes its config.json and says how to continue; resumed, it finishes
// and prints its summary, its sample and where its files are.
func TestRunPauseAndResume(t *testing.T) {
	dir := t.TempDir()
	c := tinyRun(t, dir)
	var out bytes.Buffer
	if err := Run(c, testEnv(&out)); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(c.RunDir, rundir.Checkpoint)
	if want := fmt.Sprintf("stopped at step 2 of 4; saved %s; continue with: vkgrad train --resume %s\n", ckpt, c.RunDir); out.String() != want {
		t.Errorf("paused run printed %q, want %q", out.String(), want)
	}
	raw, err := os.ReadFile(filepath.Join(c.RunDir, rundir.Config))
	if err != nil {
		t.Fatal(err)
	}
	var meta Meta
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	tiny, _ := gpt2.Preset("tiny")
	if meta.Model != tiny || meta.Train != c.Train || meta.Data.Path != c.Data.Path || meta.Data.Fingerprint == "" || *meta.Run != c.Loop {
		t.Errorf("config.json: %s", raw)
	}

	out.Reset()
	again := DefaultConfig()
	again.Resume, again.CacheDir, again.ReportTo, again.Given = c.RunDir, c.CacheDir, c.ReportTo, givenFlags()
	if err := Run(again, testEnv(&out)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{"--- sample ---", "Hi + 5 tokens at T=0.8, seed 1", "--------------",
		"checkpoint: " + ckpt, "metrics:    " + filepath.Join(c.RunDir, rundir.Metrics),
		fmt.Sprintf("curves:     %s   (vkgrad plot %s; tensorboard --logdir %s)", filepath.Join(c.RunDir, "curves.png"), c.RunDir, c.RunDir)}
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "validation loss ") || strings.Join(lines[1:], "\n") != strings.Join(want, "\n") {
		t.Errorf("finished run printed:\n%s", out.String())
	}
}

// LoadResume refuses a run directory without a config.json, naming the flag.
func TestLoadResumeWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	c := tinyRun(t, dir)
	if err := Run(c, testEnv(new(bytes.Buffer))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(c.RunDir, rundir.Config)); err != nil {
		t.Fatal(err)
	}
	again := DefaultConfig()
	again.Resume = c.RunDir
	if _, _, err := again.LoadResume(); err == nil || !strings.HasPrefix(err.Error(), "--resume: reading the run's config.json: ") {
		t.Errorf("no config.json: %v", err)
	}
}

// A dry run prints the run's memory and writes nothing.
func TestRunDry(t *testing.T) {
	c := DefaultConfig()
	c.Preset, c.DryRun, c.RunDir = "tiny", true, filepath.Join(t.TempDir(), "run")
	var out bytes.Buffer
	if err := Run(c, testEnv(&out)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "memory on ") {
		t.Errorf("dry run printed %q", out.String())
	}
	if _, err := os.Stat(c.RunDir); !os.IsNotExist(err) {
		t.Errorf("a dry run made its run directory (%v)", err)
	}
}
