// Package optim holds the optimizer (llm.c's AdamW with optional global-norm clipping, fused on
// the device) and learning-rate schedules.
package optim

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// AdamWConfig are AdamW's hyper-parameters. llm.c's CPU trainer decays every parameter, and so
// does this one.
type AdamWConfig struct {
	Beta1       float32 `json:"beta1"`
	Beta2       float32 `json:"beta2"`
	Eps         float32 `json:"eps"`
	WeightDecay float32 `json:"weight_decay"`
	// MaxGradNorm clips the global gradient norm to this value before the update; 0 disables it.
	MaxGradNorm float32 `json:"max_grad_norm"`
}

// DefaultAdamW is llm.c's setting: betas 0.9/0.999, eps 1e-8, no weight decay, no clipping.
func DefaultAdamW() AdamWConfig {
	return AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Validate names the first out-of-range field.
func (c AdamWConfig) Validate() error {
	switch {
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return fmt.Errorf("adamw: beta1 %v must be in [0, 1)", c.Beta1)
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("adamw: beta2 %v must be in [0, 1)", c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("adamw: eps %v must be positive", c.Eps)
	case !(c.WeightDecay >= 0):
		return fmt.Errorf("adamw: weight_decay %v must be non-negative", c.WeightDecay)
	case !(c.MaxGradNorm >= 0):
		return fmt.Errorf("adamw: max_grad_norm %v must be non-negative", c.MaxGradNorm)
	}
	return nil
}

// AdamW keeps the moment buffers of one flat parameter vector.
type AdamW struct {
	Config AdamWConfig
	M, V   *tensor.Tensor
	// Step counts completed updates; the next update uses Step+1 for bias correction.
	Step int

	sumSq *tensor.Tensor
	host  [1]float32
}

// NewAdamW allocates zeroed moments for n parameters on b.
func NewAdamW(b tensor.Backend, n int, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{Config: cfg}
	var err error
	if o.M, err = tensor.New(b, tensor.Float32, n); err != nil {
		return nil, fmt.Errorf("adamw: allocating first moments: %w", err)
	}
	if o.V, err = tensor.New(b, tensor.Float32, n); err != nil {
		return nil, fmt.Errorf("adamw: allocating second moments: %w", err)
	}
	if o.sumSq, err = tensor.New(b, tensor.Float32, 1); err != nil {
		return nil, err
	}
	return o, nil
}

// Update applies one AdamW step at learning rate lr. The gradient's sum of squares is computed
// on the device; with MaxGradNorm set the clipping happens there too, so no host read is needed.
func (o *AdamW) Update(params, grads *tensor.Tensor, lr float32) {
	b := params.Backend()
	o.Step++
	p := tensor.AdamWParams{LR: lr, Beta1: o.Config.Beta1, Beta2: o.Config.Beta2, Eps: o.Config.Eps,
		WeightDecay: o.Config.WeightDecay, Step: o.Step}
	b.SumSquares(o.sumSq, grads)
	if o.Config.MaxGradNorm > 0 {
		p.GradSumSq, p.MaxNorm = o.sumSq, o.Config.MaxGradNorm
	}
	b.AdamW(params, grads, o.M, o.V, p)
}

// UpdateMeasured is Update for a caller that has already put the gradient's sum of squares in
// GradSumSq() (to check it before the update): the same step, without measuring twice.
func (o *AdamW) UpdateMeasured(params, grads *tensor.Tensor, lr float32) {
	b := params.Backend()
	o.Step++
	p := tensor.AdamWParams{LR: lr, Beta1: o.Config.Beta1, Beta2: o.Config.Beta2, Eps: o.Config.Eps,
		WeightDecay: o.Config.WeightDecay, Step: o.Step}
	if o.Config.MaxGradNorm > 0 {
		p.GradSumSq, p.MaxNorm = o.sumSq, o.Config.MaxGradNorm
	}
	b.AdamW(params, grads, o.M, o.V, p)
}

// GradSumSq is the device scalar holding the sum of squared gradients of the last Update, for
// callers that read it together with other results.
func (o *AdamW) GradSumSq() *tensor.Tensor { return o.sumSq }

// GradNorm returns the global gradient norm (before clipping) measured by the last Update.
func (o *AdamW) GradNorm() (float32, error) {
	if err := o.sumSq.Backend().Download(o.host[:], o.sumSq); err != nil {
		return 0, err
	}
	return float32(math.Sqrt(float64(o.host[0]))), nil
}
