package rl

import (
	"math"

	"github.com/vkgrad/vkgrad/nn/train"
)

// Dynamic loss scaling for fp16 products, nn/train's scheme (train.LossScaler): the gradient
// of the loss with respect to each token's log-prob (and entropy and value) is multiplied by
// the scale before the backward pass, so that small gradients survive binary16 products, and
// the parameter gradients are divided by it again (train.Unscale) before they are measured and
// clipped. A gradient that overflows skips the update and halves the scale. The scale is a
// power of two, so a step that neither overflows nor underflows has the bits of an unscaled one.

// lossScaleOf is the scale of the next backward pass: 1 without a scaler.
func lossScaleOf(s *train.LossScaler) float32 {
	if s == nil {
		return 1
	}
	return s.Scale
}

// lossScaleOverflow is train.LossScaler.Overflow, "" without a scaler: the reason an update
// whose gradient norm is not finite is skipped, or "" when the caller's own guard decides.
func lossScaleOverflow(s *train.LossScaler, norm float32) string {
	if s == nil {
		return ""
	}
	return s.Overflow(norm)
}

func finite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
