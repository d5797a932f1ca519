package load

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llmc"
)

// FuzzRead: any file is recognised as a model format and read consistently, or refused.
func FuzzRead(f *testing.F) {
	cfg := gpt2.Config{MaxSeqLen: 4, VocabSize: 5, PaddedVocabSize: 8, NumLayers: 1, NumHeads: 1, Channels: 4}
	params := make([]float32, cfg.NumParams())
	testutil.SeedFile(f, func(p string) error { return llmc.WriteCheckpoint(p, cfg, params) })
	testutil.SeedFile(f, func(p string) error { return checkpoint.Save(p, &checkpoint.State{Config: cfg, Params: params}) })
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Read(testutil.FileOf(t, b))
		if err != nil {
			return
		}
		if l.Config.Validate() != nil || len(l.Params) != l.Config.NumParams() {
			t.Fatalf("read as %s: %v with %d parameters", l.Format, l.Config, len(l.Params))
		}
	})
}
