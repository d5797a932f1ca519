package gpt2_test

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/internal/kvrows/decodertest"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// decoderModel is a small random GPT-2 on a backend, as the per-row decoder checks take it: odd
// heads and a padded vocabulary.
func decoderModel(t *testing.T, be tensor.Backend, tol float64) decodertest.Model {
	t.Helper()
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: 37, PaddedVocabSize: 40, NumLayers: 2, NumHeads: 3, Channels: 24}
	m, err := gpt2.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(11); err != nil {
		t.Fatal(err)
	}
	return decodertest.Model{
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
		Width: cfg.PaddedVocabSize, Vocab: cfg.VocabSize, MaxT: cfg.MaxSeqLen, Tol: tol,
	}
}

// decoderBackends runs check on the CPU and on Vulkan (skipped without a device unless
// VKGRAD_REQUIRE_VULKAN=1).
func decoderBackends(t *testing.T, check func(*testing.T, decodertest.Model)) {
	t.Run("cpu", func(t *testing.T) { check(t, decoderModel(t, cpu.New(), 2e-5)) })
	t.Run("vulkan", func(t *testing.T) { check(t, decoderModel(t, testutil.Vulkan(t), 1e-4)) })
}

func TestDecoderRowsMatchForward(t *testing.T) {
	decoderBackends(t, decodertest.RowsMatchForward)
}

func TestDecoderForkMatchesSeparatePrefill(t *testing.T) {
	decoderBackends(t, decodertest.ForkMatchesSeparatePrefill)
}

func TestDecoderStepLeavesOtherRows(t *testing.T) {
	decoderBackends(t, decodertest.StepLeavesOtherRows)
}

func TestFaultDecoderBadRows(t *testing.T) {
	decoderBackends(t, decodertest.FaultBadInput)
}
