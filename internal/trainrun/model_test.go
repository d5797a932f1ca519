package trainrun

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/llmc"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func choice(preset string, out *bytes.Buffer) ModelChoice {
	return ModelChoice{Preset: preset, Seed: 3, Memory: Memory{Batch: 2, Seq: 32, MicroBatches: 1, Out: out}, Log: zerolog.Nop()}
}

func hostParams(t *testing.T, m Model) []float32 {
	t.Helper()
	p, err := m.GPT2().ParamsToHost()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A preset names a new model of either family, seeded; the run keeps the preset's name.
func TestChoosePreset(t *testing.T) {
	be := budgeted{cpu.New(), 1 << 34}
	m, name, err := choice("gpt2-mini", nil).Choose(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gpt2Mini(t)
	if name != "gpt2-mini" || m.GPT2() == nil || m.Llama() != nil || m.NumParams() != cfg.NumParams() || m.Describe() != cfg.String() {
		t.Errorf("gpt2-mini: name %q, model %s with %d parameters", name, m.Describe(), m.NumParams())
	}
	again, _, err := choice("gpt2-mini", nil).Choose(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hostParams(t, m), hostParams(t, again)) {
		t.Error("the same seed gave two different initial models")
	}
	other := choice("gpt2-mini", nil)
	other.Seed = 4
	if m4, _, err := other.Choose(be, nil); err != nil || slices.Equal(hostParams(t, m), hostParams(t, m4)) {
		t.Errorf("another seed gave the same initial model (%v)", err)
	}

	m, name, err = choice("llama-tiny", nil).Choose(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name != "llama-tiny" || m.Llama() == nil || m.HFDir != "" || m.Tok.Tokenizer != nil {
		t.Errorf("llama-tiny: name %q, model %s, directory %q", name, m.Describe(), m.HFDir)
	}
	if want := "LlamaForCausalLM L=4 hidden=128 heads=4/2 V=50257"; m.Describe() != want {
		t.Errorf("llama-tiny: Describe = %q, want %q", m.Describe(), want)
	}

	_, _, err = choice("gpt2-huge", nil).Choose(be, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--preset: ") || !strings.Contains(err.Error(), "llama-tiny") {
		t.Errorf("an unknown preset: %v", err)
	}
}

// --init reads a checkpoint's values and names the run after its file; a missing one is an
// error naming the flag.
func TestChooseInit(t *testing.T) {
	be := budgeted{cpu.New(), 1 << 34}
	cfg := gpt2Mini(t)
	src, _, err := choice("gpt2-mini", nil).Choose(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "start.bin")
	if err := llmc.WriteCheckpoint(path, cfg, hostParams(t, src)); err != nil {
		t.Fatal(err)
	}
	c := choice("", nil)
	c.Init = path
	m, name, err := c.Choose(be, nil)
	if err != nil {
		t.Fatal(err)
	}
	if name != "start" || m.GPT2() == nil || !slices.Equal(hostParams(t, m), hostParams(t, src)) {
		t.Errorf("--init %s: name %q, or other values than the file's", path, name)
	}
	c.Init = filepath.Join(t.TempDir(), "missing.bin")
	if _, _, err := c.Choose(be, nil); err == nil || !strings.HasPrefix(err.Error(), "--init: ") {
		t.Errorf("--init of a missing file: %v", err)
	}
}

// With DryRun the choice prints the footprint and stops with ErrDryRun.
func TestChooseDryRun(t *testing.T) {
	var out bytes.Buffer
	c := choice("gpt2-mini", &out)
	c.Memory.DryRun = true
	if _, _, err := c.Choose(budgeted{cpu.New(), 1 << 30}, nil); !errors.Is(err, ErrDryRun) {
		t.Fatalf("dry run: %v", err)
	}
	if !strings.HasPrefix(out.String(), "memory on cpu: training at B=2 T=32: ") {
		t.Errorf("dry run printed %q", out.String())
	}
}

// A model without a Hugging Face directory reads its corpus with GPT-2's tokenizer; a
// directory without a tokenizer is an error naming it.
func TestCorpusTokenizer(t *testing.T) {
	c := llamaTiny(t, cpu.New()).Config
	tok, err := CorpusTokenizer(c, "")
	if err != nil || tok.Tokenizer != nil || tok.Separator != 0 || tok.TokenizerID != "" {
		t.Errorf("no directory: %+v, %v; want GPT-2's (zero) options", tok, err)
	}
	dir := t.TempDir()
	if _, err := CorpusTokenizer(c, dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory without tokenizer.json: %v", err)
	}
}
