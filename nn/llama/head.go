package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// headBudget bounds the floats of one chunk of logits: 64M floats (256 MiB), so a 152k
// vocabulary runs about 440 rows at a time. Measured on Qwen2.5-0.5B, B=4 T=64 on the CPU
// (vkgrad bench train --preset qwen2.5-0.5b): 16M floats split the 256 rows into chunks of 110,
// whose weight-gradient products (K = rows) ran at 0.46 of the FMA peak; 64M floats take them
// in one chunk, 0.50 of the peak and 9% faster steps, for 180 MB more.
const headBudget = 64 << 20

// headChunks computes the lm head and cross-entropy a chunk of rows at a time.
type headChunks struct {
	m             *Model
	N, rows       int
	logits, probs *tensor.Tensor // (rows, V) scratch
}

// selectedHeadBudget bounds the floats of one chunk of a SelectedHead's logits: 16M floats
// (64 MiB), about 110 rows of a 152k vocabulary. RL keeps two such heads (the policy's, with
// a gradient chunk, and the reference's), and the head is a small share of an RL step, so the
// training head's larger chunks would cost 576 MiB more for little speed.
const selectedHeadBudget = 16 << 20

// headChunkRows is the number of rows per chunk: HeadChunkRows when set, else what fits the budget.
func (m *Model) headChunkRows(N int) int { return m.chunkRows(N, headBudget) }

// selectedChunkRows is headChunkRows for a SelectedHead.
func (m *Model) selectedChunkRows(N int) int { return m.chunkRows(N, selectedHeadBudget) }

func (m *Model) chunkRows(N, budget int) int {
	if m.HeadChunkRows > 0 {
		return min(N, m.HeadChunkRows)
	}
	return max(1, min(N, budget/m.Config.Vocab))
}

// newHeadChunks returns the head's chunk buffers for N rows, reusing the last ones when they
// are the same size.
func (m *Model) newHeadChunks(N int) (*headChunks, error) {
	rows := m.headChunkRows(N)
	if h := m.head1; h != nil && h.rows == rows {
		h.N = N
		return h, nil
	}
	if m.head1 != nil {
		m.head1.free()
	}
	h := &headChunks{m: m, N: N, rows: rows}
	m.head1 = h
	V := m.Config.Vocab
	var err error
	if h.logits, err = tensor.New(m.Backend, tensor.Float32, h.rows, V); err != nil {
		return nil, fmt.Errorf("llama: lm head chunk of %d rows: %w", h.rows, err)
	}
	if h.probs, err = tensor.New(m.Backend, tensor.Float32, h.rows, V); err != nil {
		h.free()
		return nil, fmt.Errorf("llama: lm head chunk of %d rows: %w", h.rows, err)
	}
	return h, nil
}

func (h *headChunks) free() {
	for _, t := range []*tensor.Tensor{h.logits, h.probs} {
		if t != nil {
			h.m.Backend.Free(t.Storage)
		}
	}
	h.logits, h.probs = nil, nil
}

// chunk runs the head's product and softmax for rows r0..r0+R-1, leaving the logits and
// probabilities in the scratch and the losses in place.
func (h *headChunks) chunk(r0, R int) (logits, probs *tensor.Tensor) {
	m, a := h.m, h.m.acts
	be, C, V := m.Backend, m.Config.Hidden, m.Config.Vocab
	logits, probs = h.logits.View(0, R, V), h.probs.View(0, R, V)
	be.MatMul(logits, a.final.Value.View(r0*C, R, C), m.head.Value, nil, tensor.MatMulParams{M: R, N: V, K: C, TransB: true})
	be.CrossEntropyForward(a.losses.Value.View(r0, R), probs, logits, a.targets.View(r0, R), R, m.TokenVocab(), V)
	return logits, probs
}

func (h *headChunks) forward() {
	for r0 := 0; r0 < h.N; r0 += h.rows {
		h.chunk(r0, min(h.rows, h.N-r0))
	}
}

// backward recomputes each chunk's logits and, with the loss fused with its backward (the
// gradient of the mean loss, which Backward seeds, is known), their gradient, then
// accumulates the gradients of the final hidden states and of the head's weight.
func (h *headChunks) backward() {
	m, a := h.m, h.m.acts
	if a.losses.Grad == nil {
		return
	}
	be, C, V := m.Backend, m.Config.Hidden, m.Config.Vocab
	for r0 := 0; r0 < h.N; r0 += h.rows {
		R := min(h.rows, h.N-r0)
		logits, dlogits := h.logits.View(0, R, V), h.probs.View(0, R, V)
		be.MatMul(logits, a.final.Value.View(r0*C, R, C), m.head.Value, nil, tensor.MatMulParams{M: R, N: V, K: C, TransB: true})
		be.CrossEntropyFused(a.losses.Value.View(r0, R), dlogits, logits, a.targets.View(r0, R), R, m.TokenVocab(), V, m.lossGrad(a.B, a.T))
		be.MatMul(a.final.Grad.View(r0*C, R, C), dlogits, m.head.Value, nil, tensor.MatMulParams{M: R, N: C, K: V, Accumulate: true})
		if m.head.Grad != nil { // nil when only adapters train
			be.MatMul(m.head.Grad, dlogits, a.final.Value.View(r0*C, R, C), nil, tensor.MatMulParams{M: V, N: C, K: R, TransA: true, Accumulate: true})
		}
	}
}
