package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// lossHead computes the lm head and the cross-entropy of every position a chunk of rows at a
// time (lossChunkRows), so training holds two (rows, Vp) chunks instead of the (B*T, Vp)
// logits and their gradient. With gradients the loss is fused with its backward (the gradient
// of the mean loss is known), and each chunk's products into the hidden states' and wte's
// gradients run at once into buffers of the head's own: the caller may clear the parameter
// gradients between the forward and the backward (ZeroGrad), and the recorded backward adds
// them in. No logits are recomputed.
type lossHead struct {
	rows, cap       int // rows per chunk; positions the per-position buffers hold
	logits, dlogits *tensor.Tensor
	losses          *tensor.Tensor // (cap)
	dhidden, dwte   *tensor.Tensor // (cap, C) and (Vp, C); with gradients only
	withGrad        bool
}

// lossHeadBudget bounds the floats of one chunk of the training loss's logits: 2048 rows of
// GPT-2's padded vocabulary (412 MiB). A chunk's product into the hidden states' gradient is
// rows x C x Vp with rows/64 x C/128 output tiles: at SelectedHead's headBudget (333 rows)
// GPT-2 124M's 36 tiles left most of an H200 idle, and a step at B=8 T=1024 took 525 ms against
// the whole head's 378; 2048 rows give 192 tiles, and the chunks still hold a quarter of that
// head's logits. A variable so that tests can make chunks of a few rows.
var lossHeadBudget = 2048 * 50304

// lossChunkRows is the rows of one chunk of the training loss's head over n positions: rows
// when positive (HeadChunkRows), else what fits lossHeadBudget.
func (c Config) lossChunkRows(n, rows int) int {
	if rows > 0 {
		return min(n, rows)
	}
	return max(1, min(n, lossHeadBudget/c.PaddedVocabSize))
}

// chunkedLoss reports whether ForwardCrossEntropy over n positions takes the lossHead: when
// its chunks, with the gradients of the hidden states and of wte, are smaller than the whole
// head's logits (and their gradient, or the probabilities).
func (m *Model) chunkedLoss(n int) bool { return m.Config.chunkedLoss(n, m.HeadChunkRows) }

func (c Config) chunkedLoss(n, chunkRows int) bool {
	rows := c.lossChunkRows(n, chunkRows)
	if rows >= n {
		return false
	}
	C, Vp := int64(c.Channels), int64(c.PaddedVocabSize)
	return 2*int64(n)*Vp > 2*int64(rows)*Vp+Vp*C+int64(n)*C
}

// lossHeadBytes is what the lossHead takes for n positions (with gradients when withGrad).
func (m *Model) lossHeadBytes(n int, withGrad bool) int64 {
	return m.Config.lossHeadBytes(n, m.HeadChunkRows, withGrad)
}

func (c Config) lossHeadBytes(n, chunkRows int, withGrad bool) int64 {
	C, Vp, rows := int64(c.Channels), int64(c.PaddedVocabSize), int64(c.lossChunkRows(n, chunkRows))
	floats := 2*rows*Vp + int64(n)
	if withGrad {
		floats += int64(n)*C + Vp*C
	}
	return 4 * floats
}

// ensureLossHead grows the model's lossHead to n positions.
func (m *Model) ensureLossHead(n int, withGrad bool) (*lossHead, error) {
	h, rows := m.loss, m.Config.lossChunkRows(n, m.HeadChunkRows)
	if h != nil && h.cap >= n && h.rows == rows && (h.withGrad || !withGrad) {
		return h, nil
	}
	m.freeLossHead()
	be, C, Vp := m.Backend, m.Config.Channels, m.Config.PaddedVocabSize
	if err := tensor.CheckFits(be, m.lossHeadBytes(n, withGrad), fmt.Sprintf("gpt2: the lm head's chunks for %d positions", n)); err != nil {
		return nil, err
	}
	h = &lossHead{rows: rows, cap: n, withGrad: withGrad}
	m.loss = h
	var err error
	alloc := func(t **tensor.Tensor, shape ...int) {
		if err == nil {
			*t, err = tensor.New(be, tensor.Float32, shape...)
		}
	}
	alloc(&h.logits, rows, Vp)
	alloc(&h.dlogits, rows, Vp)
	alloc(&h.losses, n)
	if withGrad {
		alloc(&h.dhidden, n, C)
		alloc(&h.dwte, Vp, C)
	}
	if err != nil {
		m.freeLossHead()
		return nil, fmt.Errorf("gpt2: allocating the lm head's chunks for %d positions: %w", n, err)
	}
	return h, nil
}

func (m *Model) freeLossHead() {
	h := m.loss
	if h == nil {
		return
	}
	for _, t := range []*tensor.Tensor{h.logits, h.dlogits, h.losses, h.dhidden, h.dwte} {
		if t != nil {
			m.Backend.Free(t.Storage)
		}
	}
	m.loss = nil
}

// forwardChunkedLoss runs the head and the cross-entropy against the uploaded targets chunk
// after chunk. Recording, it also computes the head's gradients (the mean loss's) and records
// their addition into lnf's and wte's gradients.
func (m *Model) forwardChunkedLoss(tp *autograd.Tape) error {
	a := m.acts
	n := a.B * a.T
	h, err := m.ensureLossHead(n, tp.Recording())
	if err != nil {
		return err
	}
	be, C, V, Vp := m.Backend, m.Config.Channels, m.TokenVocab(), m.Config.PaddedVocabSize
	losses := h.losses.View(0, n)
	for r0 := 0; r0 < n; r0 += h.rows {
		R := min(h.rows, n-r0)
		hid := a.lnf.Value.View(r0*C, R, C)
		logits, scratch := h.logits.View(0, R, Vp), h.dlogits.View(0, R, Vp)
		be.MatMul(logits, hid, m.wte.Value, nil, tensor.MatMulParams{M: R, N: Vp, K: C, TransB: true})
		if !tp.Recording() {
			be.CrossEntropyForward(losses.View(r0, R), scratch, logits, a.targets.View(r0, R), R, V, Vp)
			continue
		}
		be.CrossEntropyFused(losses.View(r0, R), scratch, logits, a.targets.View(r0, R), R, V, Vp, m.lossGrad(a.B, a.T))
		be.MatMul(h.dhidden.View(r0*C, R, C), scratch, m.wte.Value, nil, tensor.MatMulParams{M: R, N: C, K: Vp})
		be.MatMul(h.dwte, scratch, hid, nil, tensor.MatMulParams{M: Vp, N: C, K: R, TransA: true, Accumulate: r0 > 0})
	}
	a.lastLosses = losses
	if tp.Recording() {
		dhidden, dwte := h.dhidden.View(0, n, C), h.dwte
		tp.Record(func() {
			be.Axpy(a.lnf.Grad, 1, dhidden)
			if m.wte.TakeGradZero() {
				be.Copy(m.wte.Grad, dwte)
			} else {
				be.Axpy(m.wte.Grad, 1, dwte)
			}
		})
	}
	return nil
}
