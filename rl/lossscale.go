package rl

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// Dynamic loss scaling for fp16 products, nn/train's scheme (train.LossScaler): the gradient
// of the loss with respect to each token's log-prob (and entropy and value) is multiplied by
// the scale before the backward pass, so that small gradients survive binary16 products, and
// the parameter gradients are divided by it again before they are measured and clipped. A
// gradient that overflows skips the update and halves the scale. The scale is a power of two,
// so a step that neither overflows nor underflows has the bits of an unscaled one.

// lossScaleOf is the scale of the next backward pass: 1 without a scaler.
func lossScaleOf(s *train.LossScaler) float32 {
	if s == nil {
		return 1
	}
	return s.Scale
}

// unscale divides gradients scaled by s by it again (exact for a power of two).
func unscale(grads *tensor.Flat, s float32) {
	if s == 1 || grads == nil {
		return
	}
	for _, part := range grads.Parts() {
		grads.Backend().Scale(part, 1/s)
	}
}

// lossScaleOverflow records a non-finite gradient norm under loss scaling: the scale is halved
// and, when it was above train.MinLossScale, the update is to be skipped (the reason is
// returned). Without a scaler, or at the least scale, it returns "" and the caller's own
// guard decides.
func lossScaleOverflow(s *train.LossScaler, norm float32) string {
	if s == nil {
		return ""
	}
	was := s.Scale
	s.Update(false)
	if was <= train.MinLossScale {
		return ""
	}
	return fmt.Sprintf("gradient norm %v at loss scale %s; the scale is now %s, the update skipped", norm, powerOfTwo(was), powerOfTwo(s.Scale))
}

// powerOfTwo writes a loss scale as 2^k.
func powerOfTwo(s float32) string {
	_, exp := math.Frexp(float64(s))
	return fmt.Sprintf("2^%d", exp-1)
}

func finite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
