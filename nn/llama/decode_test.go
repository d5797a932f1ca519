package llama

import (
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/nn/internal/kvrows/decodertest"
	"github.com/vkgrad/vkgrad/tensor"
)

// decoderChecks runs check on every fixture model (grouped-query attention, q/k norms, biases,
// scaled rotary embeddings) on the CPU and on Vulkan (skipped without a device unless
// VKGRAD_REQUIRE_VULKAN=1).
func decoderChecks(t *testing.T, check func(*testing.T, decodertest.Model)) {
	for _, dir := range fixtureDirs(t) {
		for _, bname := range []string{"cpu", "vulkan"} {
			t.Run(filepath.Base(dir)+"/"+bname, func(t *testing.T) {
				m, err := Load(backends[bname](t), dir)
				if err != nil {
					t.Fatal(err)
				}
				check(t, decodertest.Model{
					NewDecoder: func(B, limit int) (decodertest.Decoder, error) { return m.NewDecoder(B, limit) },
					Forward: func(t *testing.T, seq []int32, B, T int) []float32 {
						if err := m.Forward(nil, seq, B, T); err != nil {
							t.Fatal(err)
						}
						l, err := tensor.ToHost(m.Logits().Value)
						if err != nil {
							t.Fatal(err)
						}
						return l
					},
					Width: m.Config.Vocab, Vocab: m.Config.Vocab, MaxT: m.Config.MaxPositions, Tol: 1e-4,
				})
			})
		}
	}
}

func TestDecoderRowsMatchForward(t *testing.T) {
	decoderChecks(t, decodertest.RowsMatchForward)
}

func TestDecoderForkMatchesSeparatePrefill(t *testing.T) {
	decoderChecks(t, decodertest.ForkMatchesSeparatePrefill)
}

func TestDecoderStepLeavesOtherRows(t *testing.T) {
	decoderChecks(t, decodertest.StepLeavesOtherRows)
}

func TestFaultDecoderBadRows(t *testing.T) {
	decoderChecks(t, decodertest.FaultBadInput)
}
