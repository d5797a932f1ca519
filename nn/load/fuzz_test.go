package load

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llmc"
)

// FuzzRead: any file is recognised as a model format and read consistently, or refused.
func FuzzRead(f *testing.F) {
	cfg := gpt2.Config{MaxSeqLen: 4, VocabSize: 5, PaddedVocabSize: 8, NumLayers: 1, NumHeads: 1, Channels: 4}
	params := make([]float32, cfg.NumParams())
	dir := f.TempDir()
	for name, write := range map[string]func(string) error{
		"llmc":   func(p string) error { return llmc.WriteCheckpoint(p, cfg, params) },
		"vkgrad": func(p string) error { return checkpoint.Save(p, &checkpoint.State{Config: cfg, Params: params}) },
	} {
		p := filepath.Join(dir, name)
		if err := write(p); err != nil {
			f.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "model")
		os.WriteFile(p, b, 0o644)
		l, err := Read(p)
		if err != nil {
			return
		}
		if l.Config.Validate() != nil || len(l.Params) != l.Config.NumParams() {
			t.Fatalf("read as %s: %v with %d parameters", l.Format, l.Config, len(l.Params))
		}
	})
}
