package train

import (
	"fmt"
	"math"
	"time"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/tensor"
)

// Dynamic loss scaling for products with binary16 operands. Binary16's smallest normal value
// is 2^-14 and its subnormals end at 2^-24, so gradients of a few 1e-5 and below, common deep
// in a network, flush to zero when a product rounds them; multiplying the loss gradient by a
// large scale lifts them into range, and the parameter gradients are divided by it again
// before clipping and the update. Too large a scale overflows binary16's 65504 into Inf: the
// step is then skipped and the scale halved. The scheme and constants are those of
// PyTorch's GradScaler.
const (
	// InitialLossScale, 2^16, puts gradients down to about 2^-40 within binary16's range; an
	// overflow in the first steps costs one skipped step per halving.
	InitialLossScale = 1 << 16
	// LossScaleGrowthInterval is how many finite steps in a row double the scale: rarely
	// enough that an overflow (one lost step) is rare, often enough that the scale follows
	// gradients that shrink as training goes on.
	LossScaleGrowthInterval = 2000
	// MinLossScale is the smallest scale: below 1 scaling would shrink gradients, the
	// opposite of its purpose.
	MinLossScale = 1
	// MaxLossScale bounds doubling far above any useful binary16 scale, so 1/scale (times a
	// micro-batch mean's 1/K) stays a normal float32 and unscaling stays exact.
	MaxLossScale = 1 << 62
)

// LossScaler is the state of dynamic loss scaling. Scale is a power of two, so scaling and
// unscaling change no bits of a gradient that neither overflows nor underflows.
type LossScaler struct {
	Scale float32 `json:"scale"` // the scale of the next step
	// GoodSteps counts finite steps since the scale last changed.
	GoodSteps int `json:"good_steps"`
	// GrowthInterval is how many finite steps in a row double Scale (LossScaleGrowthInterval).
	GrowthInterval int `json:"growth_interval"`
}

// NewLossScaler starts at InitialLossScale, doubling every LossScaleGrowthInterval steps.
func NewLossScaler() *LossScaler {
	return &LossScaler{Scale: InitialLossScale, GrowthInterval: LossScaleGrowthInterval}
}

// Update records a step: a gradient that was not finite halves the scale (not below
// MinLossScale) and restarts the count; GrowthInterval finite steps in a row double it (not
// above MaxLossScale).
func (s *LossScaler) Update(finite bool) {
	if !finite {
		s.Scale = max(s.Scale/2, MinLossScale)
		s.GoodSteps = 0
		return
	}
	s.GoodSteps++
	if s.GrowthInterval > 0 && s.GoodSteps >= s.GrowthInterval {
		s.Scale = min(s.Scale*2, MaxLossScale)
		s.GoodSteps = 0
	}
}

// Overflow records a step whose gradient (of norm gradNorm) was not finite: the scale is
// halved and, when it was above MinLossScale, the step is to be skipped as part of the scaling
// and the reason is returned. At the least scale it returns "", and the caller's own
// non-finite guard decides.
func (s *LossScaler) Overflow(gradNorm float32) string {
	was := s.Scale
	s.Update(false)
	if was <= MinLossScale {
		return ""
	}
	return fmt.Sprintf("gradient norm %v at loss scale %s; the scale is now %s", gradNorm, powerOfTwo(was), powerOfTwo(s.Scale))
}

// Unscale divides gradients that were scaled by scale by it again (exact for a power of two;
// nothing to do at 1).
func Unscale(grads *tensor.Flat, scale float32) {
	if scale == 1 || grads == nil {
		return
	}
	for _, part := range grads.Parts() {
		grads.Backend().Scale(part, 1/scale)
	}
}

// applyLossScale gives the model the scale of the step about to run and returns it (1
// without a scaler).
func (t *Trainer) applyLossScale() (float32, error) {
	if t.Scaler == nil {
		return 1, nil
	}
	m, ok := t.Model.(nn.LossScaler)
	if !ok {
		return 0, fmt.Errorf("loss scaling: the model cannot scale its loss gradient")
	}
	m.SetLossScale(t.Scaler.Scale)
	return t.Scaler.Scale, nil
}

// unscaledMean is the factor that turns the sum of K micro-batch gradients, each scaled by
// scale, into their unscaled mean: 1/K times 1/scale, exact for a power-of-two scale.
func unscaledMean(K int, scale float32) float32 {
	if scale == 1 {
		return 1 / float32(K)
	}
	return 1 / float32(K) * (1 / scale)
}

// lossScaleOverflow handles a step whose gradient was not finite under loss scaling: the
// scale is halved, and when the loss was finite and the scale above MinLossScale the step is
// skipped as part of the scaling (not counted towards MaxSkips) and true returned. Otherwise
// the caller's non-finite guard decides.
func (t *Trainer) lossScaleOverflow(s *StepStats, start time.Time) bool {
	sc := t.Scaler
	if sc == nil {
		return false
	}
	reason := sc.Overflow(s.GradNorm)
	if !finite(s.Loss) || reason == "" {
		return false
	}
	s.Skipped, s.Seconds, s.Reason = true, time.Since(start).Seconds(), reason
	t.Skipped++
	return true
}

// powerOfTwo writes a loss scale as 2^k.
func powerOfTwo(s float32) string {
	_, exp := math.Frexp(float64(s))
	return fmt.Sprintf("2^%d", exp-1)
}

// Keys of the loss scaler's state in a checkpoint's optimizer extras.
const (
	extraLossScale     = "loss_scale"
	extraLossScaleGood = "loss_scale_good_steps"
)

// optimizerExtra is the optimizer state a checkpoint keeps beside the moments: AdamW's step
// and the loss scaler's state.
func (t *Trainer) optimizerExtra() map[string]float64 {
	e := map[string]float64{"adam_step": float64(t.Opt.Step)}
	if t.Scaler != nil {
		e[extraLossScale], e[extraLossScaleGood] = float64(t.Scaler.Scale), float64(t.Scaler.GoodSteps)
	}
	return e
}

// restoreLossScale continues a checkpoint's loss scaling; a checkpoint without one (another
// precision) leaves the scaler as New made it.
func (t *Trainer) restoreLossScale(extra map[string]float64) error {
	s, ok := extra[extraLossScale]
	if !ok || t.Scaler == nil {
		return nil
	}
	if !(s >= MinLossScale && s <= MaxLossScale) || math.Float32bits(float32(s))&0x7fffff != 0 {
		return fmt.Errorf("loss scale %v in the checkpoint is not a power of two in [%d, 2^62]", s, MinLossScale)
	}
	t.Scaler.Scale = float32(s)
	t.Scaler.GoodSteps = int(extra[extraLossScaleGood])
	return nil
}
