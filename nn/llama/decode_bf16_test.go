package llama

import (
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/nn/internal/kvrows/decodertest"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestDecoderBF16WeightCopies checks decoding with bfloat16 weight copies against bf16
// decoding of the float32 weights, and that a Reset decoder reads updated weights
// (decodertest.HalfWeightsMatch), on every fixture model, without and with LoRA adapters
// (which stay float32; their B made non-zero so they count).
func TestDecoderBF16WeightCopies(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		for _, lora := range []bool{false, true} {
			name := filepath.Base(dir)
			if lora {
				name += "/lora"
			}
			t.Run(name, func(t *testing.T) {
				be := &decodertest.HalfCounter{Backend: cpu.NewWithThreads(3)}
				m, err := Load(be, dir)
				if err != nil {
					t.Fatal(err)
				}
				if lora {
					if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8}, 1); err != nil {
						t.Fatal(err)
					}
					scaleFlat(t, m.lora.params, 0.5, 0.01)
				}
				if err := be.SetProductPrecision(tensor.BF16); err != nil { // for ModelCopyBytes
					t.Fatal(err)
				}
				decodertest.HalfWeightsMatch(t, decodertest.HalfModel{
					Backend: be,
					NewDecoder: func(B, limit int) (decodertest.ResettableDecoder, error) {
						return m.NewDecoder(B, limit)
					},
					CopyBytes:      func(d decodertest.ResettableDecoder) int64 { return d.(*Decoder).WeightCopyBytes() },
					ModelCopyBytes: m.DecoderCopyBytes(),
					Perturb:        func(t *testing.T) { scaleFlat(t, m.Params, 1.25, 0) },
					TrunkProducts:  7 * m.Config.Layers,
					Width:          m.Config.Vocab,
					Vocab:          m.Config.Vocab,
				})
			})
		}
	}
}

// scaleFlat sets every value v of f to s·v + add.
func scaleFlat(t *testing.T, f interface {
	ToHost() ([]float32, error)
	Upload([]float32) error
}, s, add float32) {
	t.Helper()
	v, err := f.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for i := range v {
		v[i] = s*v[i] + add
	}
	if err := f.Upload(v); err != nil {
		t.Fatal(err)
	}
}
