package llmc

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

var fuzzCfg = gpt2.Config{MaxSeqLen: 4, VocabSize: 5, PaddedVocabSize: 8, NumLayers: 1, NumHeads: 1, Channels: 4}

// FuzzReadCheckpoint: any bytes give a checkpoint that agrees with its own header, or an error.
func FuzzReadCheckpoint(f *testing.F) {
	params := make([]float32, fuzzCfg.NumParams())
	testutil.SeedFile(f, func(p string) error { return WriteCheckpoint(p, fuzzCfg, params) })
	testutil.SeedFile(f, func(p string) error { return WriteCheckpointBF16(p, fuzzCfg, params) })
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, ps, err := ReadCheckpoint(testutil.FileOf(t, b))
		if err != nil {
			return
		}
		if cfg.Validate() != nil || len(ps) != cfg.NumParams() {
			t.Fatalf("accepted %v with %d parameters", cfg, len(ps))
		}
	})
}

// FuzzReadDebugState: any bytes give a state of the expected sizes, or an error.
func FuzzReadDebugState(f *testing.F) {
	n := fuzzCfg.NumParams()
	testutil.SeedFile(f, func(p string) error {
		return WriteDebugState(p, fuzzCfg, &DebugState{B: 1, T: 2, X: []int32{0, 1}, Y: []int32{1, 2},
			Logits: make([]float32, 2*fuzzCfg.VocabSize), Grads: make([]float32, n)})
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadDebugState(testutil.FileOf(t, b), fuzzCfg)
		if err != nil {
			return
		}
		if len(s.X) != s.B*s.T || len(s.Logits) != s.B*s.T*fuzzCfg.VocabSize || len(s.Grads) != n {
			t.Fatalf("accepted a state with B=%d T=%d and %d logits, %d gradients", s.B, s.T, len(s.Logits), len(s.Grads))
		}
	})
}
