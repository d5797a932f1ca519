package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/hf"
	"github.com/vkgrad/vkgrad/nn/llmc"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestReadEveryFormat writes the same parameters in each format and reads them back by content.
func TestReadEveryFormat(t *testing.T) {
	// Hugging Face files carry no padding, so imports pad V to a multiple of 128.
	cfg := gpt2.Config{MaxSeqLen: 8, VocabSize: 30, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 8}
	params := make([]float32, cfg.NumParams())
	r := rng.New(1)
	for i := range params {
		params[i] = float32(r.Normal())
	}
	// Padded vocabulary rows are zero in every format.
	for i := cfg.VocabSize * cfg.Channels; i < cfg.PaddedVocabSize*cfg.Channels; i++ {
		params[i] = 0
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	os.Mkdir(run, 0o755)
	files := map[Format]string{
		FormatLLMC:        filepath.Join(dir, "model.bin"),
		FormatHuggingFace: filepath.Join(dir, "hf.safetensors"),
		FormatVkgrad:      filepath.Join(run, RunCheckpoint),
	}
	if err := llmc.WriteCheckpoint(files[FormatLLMC], cfg, params); err != nil {
		t.Fatal(err)
	}
	if err := hf.Export(files[FormatHuggingFace], cfg, params); err != nil {
		t.Fatal(err)
	}
	if err := hf.WriteConfig(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(files[FormatVkgrad], &checkpoint.State{Config: cfg, Step: 3, Params: params}); err != nil {
		t.Fatal(err)
	}
	for format, path := range files {
		if format == FormatVkgrad {
			path = run // a run directory resolves to its checkpoint
		}
		l, err := Read(path)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if l.Format != format {
			t.Errorf("%s read as %s", path, l.Format)
		}
		if l.Config != cfg {
			t.Errorf("%s: config %v, want %v", format, l.Config, cfg)
		}
		for i := range params {
			if l.Params[i] != params[i] {
				t.Fatalf("%s: parameter %d is %v, want %v", format, i, l.Params[i], params[i])
			}
		}
	}
	m, l, err := Model(files[FormatVkgrad], cpu.New())
	if err != nil || l.State.Step != 3 || m.Config != cfg {
		t.Fatalf("Model: %v %+v", err, l)
	}

	junk := filepath.Join(dir, "junk.bin")
	os.WriteFile(junk, []byte("definitely not a model file"), 0o644)
	if _, err := Read(junk); err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("junk file: %v", err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("directory without a checkpoint: %v", err)
	}
}
