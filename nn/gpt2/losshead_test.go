package gpt2_test

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// wideCfg has a vocabulary many times its width, as GPT-2's is, so the chunked loss head
// is smaller than the whole one.
var wideCfg = gpt2.Config{NumLayers: 2, NumHeads: 2, Channels: 8, MaxSeqLen: 12, VocabSize: 250, PaddedVocabSize: 256}

const wideB, wideT = 3, 10

// lossRun is what one training pass gave: the mean and per-token losses, every parameter's
// gradient, and the most bytes live on the backend.
type lossRun struct {
	loss, evalLoss float32
	losses         []float32
	grads          []float32
	peak           int
}

// runLoss runs ForwardLoss and Backward on wideCfg with the head in chunks of rows rows
// (0: the default, the whole head here), clearing the gradients between the two as the
// trainer does.
func runLoss(t *testing.T, rows int) lossRun {
	t.Helper()
	be := &peakBytes{liveBytes: liveBytes{Backend: cpu.New()}}
	m := gradModel(t, be, wideCfg, 3)
	m.HeadChunkRows = rows
	r := rng.New(41)
	inputs, targets := make([]int32, wideB*wideT), make([]int32, wideB*wideT)
	for i := range inputs {
		inputs[i], targets[i] = int32(r.Intn(wideCfg.VocabSize)), int32(r.Intn(wideCfg.VocabSize))
	}
	var out lossRun
	var err error
	if out.evalLoss, err = m.ForwardLoss(nil, inputs, targets, wideB, wideT); err != nil {
		t.Fatal(err)
	}
	m.ReleaseActivations()
	before := be.live
	be.peak = before
	tp := autograd.NewTape()
	if out.loss, err = m.ForwardLoss(tp, inputs, targets, wideB, wideT); err != nil {
		t.Fatal(err)
	}
	out.losses = append([]float32(nil), m.TokenLosses()...)
	m.ZeroGrad()
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	if out.grads, err = m.GradsToHost(); err != nil {
		t.Fatal(err)
	}
	out.peak = be.peak - before
	return out
}

// peakBytes records the most bytes live at once.
type peakBytes struct {
	liveBytes
	peak int
}

func (b *peakBytes) Alloc(dt tensor.DType, n int) (tensor.Storage, error) {
	s, err := b.liveBytes.Alloc(dt, n)
	b.peak = max(b.peak, b.live)
	return s, err
}

// The training loss computed a few rows at a time gives the losses of the whole head and its
// gradients within float32 rounding (only the order in which wte's gradient adds the chunks
// differs), and holds chunks of rows instead of the (B*T, Vp) logits and their gradient.
func TestChunkedLossMatchesWhole(t *testing.T) {
	whole := runLoss(t, 0)
	logits := 4 * wideB * wideT * wideCfg.PaddedVocabSize
	for _, rows := range []int{1, 4, 7} {
		got := runLoss(t, rows)
		closeTo(t, "loss", rows, []float32{got.loss}, []float32{whole.loss}, 1e-6)
		closeTo(t, "loss without the tape", rows, []float32{got.evalLoss}, []float32{whole.evalLoss}, 1e-6)
		closeTo(t, "per-token losses", rows, got.losses, whole.losses, 1e-6)
		closeTo(t, "parameter gradients", rows, got.grads, whole.grads, 1e-4)
		// The whole head holds the logits, the losses, log-probs and entropies, and their
		// gradients; the chunks two (rows, Vp) buffers, the losses, wte's gradient (Vp, C)
		// and the hidden states' (B*T, C).
		saved := whole.peak - got.peak
		n := wideB * wideT
		want := 2*logits + 4*6*n - 4*(2*rows*wideCfg.PaddedVocabSize+n+wideCfg.PaddedVocabSize*wideCfg.Channels+n*wideCfg.Channels)
		if saved != want {
			t.Errorf("chunks of %d rows: peak %d bytes, the whole head's %d: saved %d, want %d", rows, got.peak, whole.peak, saved, want)
		}
	}
}
