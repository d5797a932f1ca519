package checkpoint

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// FuzzLoad: any bytes give a state that passes the checks a save makes, or an error.
func FuzzLoad(f *testing.F) {
	cfg := gpt2.Config{MaxSeqLen: 4, VocabSize: 5, PaddedVocabSize: 8, NumLayers: 1, NumHeads: 1, Channels: 4}
	n := cfg.NumParams()
	st := &State{Config: cfg, Step: 3, Params: make([]float32, n), AdamM: make([]float32, n), AdamV: make([]float32, n),
		RNG: []uint64{1, 2}, Meta: map[string]string{"k": "v"}, Extra: map[string][]float32{"head": {1, 2}}}
	testutil.SeedFile(f, func(p string) error { return Save(p, st) })
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Load(testutil.FileOf(t, b))
		if err != nil {
			return
		}
		if err := got.check(); err != nil {
			t.Fatalf("loaded a state that would not save: %v", err)
		}
	})
}
