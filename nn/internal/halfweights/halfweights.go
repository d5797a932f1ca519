// Package halfweights holds a decoder's bfloat16 copies of the weight matrices its steps multiply.
//
// A decoding step of a few rows reads every weight once, so its time is the weights' bytes:
// in BF16 product precision a bfloat16 copy (tensor.HalfWeightMatMuler) halves them and gives
// the same bits. [New] makes the copies when the backend offers them in its current precision;
// [Set.MatMul] multiplies with a copy where one applies and falls back to the float32 weights
// otherwise. The copies follow the weights only when refreshed: [Set.MarkStale] makes the next
// [Set.Refresh] round them again.
package halfweights

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Matrix is a weight a decoding step multiplies as op(B) = Wᵀ: W holds N rows of K values.
type Matrix struct {
	W    *tensor.Tensor
	N, K int
}

// Set is a decoder's bfloat16 copies, keyed by the weight tensor they copy. The zero of *Set
// (nil) holds none and multiplies with the float32 weights.
type Set struct {
	be     tensor.HalfWeightMatMuler
	copies map[*tensor.Tensor]tensor.HalfWeight
	srcs   []Matrix
	stale  bool
}

// New copies each weight in bfloat16 when b offers copies in its current product precision
// (tensor.HalfWeightsFor), and returns nil otherwise. A weight listed twice is copied once.
func New(b tensor.Backend, weights []Matrix) (*Set, error) {
	hb, ok := tensor.HalfWeightsFor(b)
	if !ok {
		return nil, nil
	}
	s := &Set{be: hb, copies: make(map[*tensor.Tensor]tensor.HalfWeight, len(weights))}
	for _, w := range weights {
		if _, dup := s.copies[w.W]; dup {
			continue
		}
		h, err := hb.NewHalfWeight(w.W.View(0, w.N, w.K))
		if err != nil {
			s.Free()
			return nil, fmt.Errorf("a bfloat16 copy of a %dx%d weight: %w", w.N, w.K, err)
		}
		s.copies[w.W] = h
		s.srcs = append(s.srcs, w)
	}
	return s, nil
}

// CopyBytes is what New would allocate for weights on b: two bytes a weight, each tensor
// once, when b offers copies in its current product precision (tensor.HalfWeightsFor), else 0.
func CopyBytes(b tensor.Backend, weights []Matrix) int64 {
	if _, ok := tensor.HalfWeightsFor(b); !ok {
		return 0
	}
	seen := make(map[*tensor.Tensor]bool, len(weights))
	var n int64
	for _, w := range weights {
		if !seen[w.W] {
			seen[w.W] = true
			n += 2 * int64(w.N) * int64(w.K)
		}
	}
	return n
}

// Bytes is the copies' memory (0 for nil).
func (s *Set) Bytes() int64 {
	if s == nil {
		return 0
	}
	var n int64
	for _, h := range s.copies {
		n += h.Bytes()
	}
	return n
}

// MarkStale records that the weights may have changed: the next Refresh rounds them again.
func (s *Set) MarkStale() {
	if s != nil {
		s.stale = true
	}
}

// Refresh rounds the weights into their copies again if MarkStale was called since the copies
// were last made.
func (s *Set) Refresh() error {
	if s == nil || !s.stale {
		return nil
	}
	for _, w := range s.srcs {
		if err := s.copies[w.W].Refresh(w.W.View(0, w.N, w.K)); err != nil {
			return err
		}
	}
	s.stale = false
	return nil
}

// MatMul computes out = a @ wᵀ (+ bias) as b.MatMul would (p.TransB set): with w's copy when
// there is one, p has at most the backend's HalfWeightRows rows and the backend still computes
// in BF16; else with w itself.
func (s *Set) MatMul(b tensor.Backend, out, a, w, bias *tensor.Tensor, p tensor.MatMulParams) {
	if s != nil && p.M <= s.be.HalfWeightRows() && p.Batch <= 1 && s.be.ProductPrecision() == tensor.BF16 {
		if h, ok := s.copies[w]; ok {
			s.be.MatMulHalf(out, a, h, bias, p)
			return
		}
	}
	b.MatMul(out, a, w, bias, p)
}

// Free releases the copies.
func (s *Set) Free() {
	if s == nil {
		return
	}
	for _, h := range s.copies {
		h.Free()
	}
	s.copies, s.srcs = nil, nil
}
