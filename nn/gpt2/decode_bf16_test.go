package gpt2_test

import (
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/internal/kvrows/decodertest"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestDecoderBF16WeightCopies checks decoding with bfloat16 weight copies against bf16
// decoding of the float32 weights, and that a Reset decoder reads updated weights
// (decodertest.HalfWeightsMatch). Widths past a multiple of 16 and a vocabulary past a
// multiple of 4 leave the dot kernels' tails.
func TestDecoderBF16WeightCopies(t *testing.T) {
	be := &decodertest.HalfCounter{Backend: cpu.NewWithThreads(3)}
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: 37, PaddedVocabSize: 38, NumLayers: 2, NumHeads: 3, Channels: 36}
	m, err := gpt2.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(5); err != nil {
		t.Fatal(err)
	}
	if err := be.SetProductPrecision(tensor.BF16); err != nil { // for ModelCopyBytes
		t.Fatal(err)
	}
	decodertest.HalfWeightsMatch(t, decodertest.HalfModel{
		Backend: be,
		NewDecoder: func(B, limit int) (decodertest.ResettableDecoder, error) {
			return m.NewDecoder(B, limit)
		},
		CopyBytes:      func(d decodertest.ResettableDecoder) int64 { return d.(*gpt2.Decoder).WeightCopyBytes() },
		ModelCopyBytes: m.DecoderCopyBytes(),
		Perturb: func(t *testing.T) {
			v, err := m.Params.ToHost()
			if err != nil {
				t.Fatal(err)
			}
			for i := range v {
				v[i] *= 1.25
			}
			if err := m.Params.Upload(v); err != nil {
				t.Fatal(err)
			}
		},
		TrunkProducts: 4 * cfg.NumLayers,
		Width:         cfg.PaddedVocabSize,
		Vocab:         cfg.VocabSize,
	})
	want := 2 * int64(cfg.NumLayers*12*cfg.Channels*cfg.Channels+cfg.PaddedVocabSize*cfg.Channels)
	if got := m.DecoderCopyBytes(); got != want {
		t.Fatalf("DecoderCopyBytes = %d, want %d", got, want)
	}
}
