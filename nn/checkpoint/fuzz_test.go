package checkpoint

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// FuzzLoad: any bytes give a state that passes the checks a save makes, or an error.
func FuzzLoad(f *testing.F) {
	cfg := gpt2.Config{MaxSeqLen: 4, VocabSize: 5, PaddedVocabSize: 8, NumLayers: 1, NumHeads: 1, Channels: 4}
	n := cfg.NumParams()
	st := &State{Config: cfg, Step: 3, Params: make([]float32, n), AdamM: make([]float32, n), AdamV: make([]float32, n),
		RNG: []uint64{1, 2}, Meta: map[string]string{"k": "v"}, Extra: map[string][]float32{"head": {1, 2}}}
	testutil.SeedFile(f, func(p string) error { return Save(p, st) })
	// A small Llama-family state, and the same claiming a billion layers in its metadata.
	lc := llama.Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 8, Layers: 2, Heads: 2, KVHeads: 1,
		HeadDim: 4, Intermediate: 8, Vocab: 16, MaxPositions: 8, RMSNormEps: 1e-6, RopeTheta: 10000, QKNorm: true, TieEmbeddings: true}
	ll := &State{Llama: &lc, Params: make([]float32, lc.NumParams())}
	testutil.SeedFile(f, func(p string) error { return Save(p, ll) })
	testutil.SeedFile(f, func(p string) error {
		ts, meta, err := encode(ll)
		if err != nil {
			return err
		}
		meta[MetadataKey] = strings.Replace(meta[MetadataKey], `"Layers":2`, `"Layers":1000000000`, 1)
		return safetensors.WriteFile(p, ts, meta)
	})
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
