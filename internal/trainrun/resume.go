package trainrun

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
)

// LoadResume reads the checkpoint of the run in c.Resume and adopts the run's settings (Adopt),
// continuing in its directory unless RunDir names another. hfDir is the Hugging Face directory
// of a Llama-family run's tokenizer ("" for GPT-2's).
func (c *Config) LoadResume() (l *load.Loaded, hfDir string, err error) {
	rundir.RestoreReplacedAt(c.Resume)
	l, err = load.Read(c.Resume)
	if err != nil {
		return nil, "", fmt.Errorf("--resume: %w", err)
	}
	if l.State == nil || l.State.AdamM == nil {
		return nil, "", fmt.Errorf("--resume %s: %s is a %s without optimizer state; use --init to start a new run from it", c.Resume, l.Path, l.Format)
	}
	saved, ok, err := train.SavedConfig(l.State)
	if err != nil {
		return nil, "", fmt.Errorf("--resume %s: %w", l.Path, err)
	}
	if !ok {
		return nil, "", fmt.Errorf("--resume %s: checkpoint holds no training configuration", l.Path)
	}
	cfgPath := filepath.Join(filepath.Dir(l.Path), rundir.Config)
	raw, err := rundir.ReadConfig(filepath.Dir(l.Path))
	if err != nil {
		return nil, "", fmt.Errorf("--resume: reading the run's config.json: %w", err)
	}
	var meta Meta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, "", fmt.Errorf("--resume: %s: %w", cfgPath, err)
	}
	if err := c.Adopt(saved, meta, l.State.Step); err != nil {
		return nil, "", fmt.Errorf("--resume %s: %w", c.Resume, err)
	}
	if c.RunDir == "" {
		c.RunDir = filepath.Dir(l.Path)
	}
	return l, meta.HFDir, nil
}

// Adopt replaces c's settings with those of a run saved with saved and meta at step: the ones
// that decide the numbers (fixedFlags) must be unchanged if given again; --steps may grow;
// --recompute and the run-loop ones (--val-every, --save-every, ...) are carried over unless
// given.
func (c *Config) Adopt(saved train.Config, meta Meta, step int) error {
	if saved.Precision == "" {
		saved.Precision = "fp32" // runs saved before products had a precision
	}
	was := Config{Train: saved, Data: meta.Data, Init: meta.Init}
	for _, f := range fixedFlags {
		if !c.given(f.name) {
			continue
		}
		if given, kept := f.value(c), f.value(&was); given != kept {
			return fmt.Errorf("--%s %s: this run was saved with --%s %s, which a resumed run keeps", f.name, given, f.name, kept)
		}
	}
	steps, recompute, loop := c.Train.Steps, c.Train.Recompute, c.Loop
	c.Train, c.Data, c.Loop = saved, meta.Data, defaultLoop
	if meta.Run != nil {
		c.Loop = *meta.Run
	}
	if c.given("recompute") { // it leaves the numbers alone, so a resume may change it
		c.Train.Recompute = recompute
	}
	if c.given("steps") {
		// Extending a run changes its schedule from here on; it no longer matches a straight run.
		if steps < step {
			return fmt.Errorf("--steps %d: the run has already taken %d steps", steps, step)
		}
		c.Train.Steps = steps
	}
	if c.given("val-every") {
		c.Loop.ValEvery = loop.ValEvery
	}
	if c.given("save-every") {
		c.Loop.SaveEvery = loop.SaveEvery
	}
	if c.given("sample-tokens") {
		c.Loop.SampleTokens = loop.SampleTokens
	}
	if c.given("sample-prompt") {
		c.Loop.SamplePrompt = loop.SamplePrompt
	}
	return nil
}

// fixedFlags are the flags that decide a run's numbers, with their values written as the
// command line's flags write them: a resumed run keeps its own, and a different value given
// again is refused, naming the saved one. (--preset is free: a resumed run's shape is its
// checkpoint's.)
var fixedFlags = []struct {
	name  string
	value func(c *Config) string
}{
	{"data", func(c *Config) string { return c.Data.Path }},
	{"ext", func(c *Config) string { return sliceFlag(c.Data.Ext) }},
	{"max-bytes", func(c *Config) string { return strconv.FormatInt(c.Data.MaxBytes, 10) }},
	{"init", func(c *Config) string { return c.Init }},
	{"batch", func(c *Config) string { return strconv.Itoa(c.Train.Batch) }},
	{"micro-batches", func(c *Config) string { return strconv.Itoa(c.Train.MicroBatches) }},
	{"seq", func(c *Config) string { return strconv.Itoa(c.Train.Seq) }},
	{"lr", func(c *Config) string { return floatFlag(c.Train.LR) }},
	{"min-lr", func(c *Config) string { return floatFlag(c.Train.MinLR) }},
	{"warmup", func(c *Config) string { return strconv.Itoa(c.Train.Warmup) }},
	{"weight-decay", func(c *Config) string { return floatFlag(c.Train.WeightDecay) }},
	{"decay-matrices-only", func(c *Config) string { return strconv.FormatBool(c.Train.DecayMatricesOnly) }},
	{"clip", func(c *Config) string { return floatFlag(c.Train.MaxGradNorm) }},
	{"seed", func(c *Config) string { return strconv.FormatUint(c.Train.Seed, 10) }},
	{"no-shuffle", func(c *Config) string { return strconv.FormatBool(c.Train.NoShuffle) }},
	{"val-fraction", func(c *Config) string { return floatFlag(c.Train.ValFraction) }},
	{"val-batches", func(c *Config) string { return strconv.Itoa(c.Train.ValBatches) }},
	{"on-nonfinite", func(c *Config) string { return c.Train.OnNonFinite }},
	{"max-skips", func(c *Config) string { return strconv.Itoa(c.Train.MaxSkips) }},
	{"precision", func(c *Config) string { return c.Train.Precision }},
}

// floatFlag writes a number as a flag's value: the shortest form that reads back the same.
func floatFlag(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// sliceFlag writes a list as a flag's value: its CSV line in brackets.
func sliceFlag(vals []string) string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(vals) // a bytes.Buffer does not fail
	w.Flush()
	return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
}
