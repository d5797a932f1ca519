// Package optim is the trainers' optimizer: llm.c's AdamW and a cosine learning-rate schedule.
//
// [AdamW], made by [NewAdamW] over a model's flat parameter buffer, updates the parameters in
// fused passes on the device, with optional clipping of the global gradient norm ([AdamWConfig]);
// [AdamW.SetNoDecay] exempts some [Span] ranges from weight decay. [Cosine] is linear warmup
// then cosine decay. [Settings] are the options a run chooses, shared by nn/train and rl's
// trainers, and give both the [AdamWConfig] and the [Cosine] schedule.
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

// AdamW keeps the moment buffers of one flat parameter vector, laid out as the parameters.
type AdamW struct {
	Config AdamWConfig
	M, V   *tensor.Flat
	// Step counts completed updates; the next update uses Step+1 for bias correction.
	Step int

	sumSq, partSq *tensor.Tensor // the global sum of squared gradients; one part's
	host          [1]float32
	segments      []segment // nil: one pass decaying every parameter
	passes        []pass    // the kernel launches of an update, made once per parameter vector
	passesFor     [2]*tensor.Flat
}

// Span is the run [Off, Off+N) of a flat parameter buffer.
type Span struct{ Off, N int }

// segment is a run of parameters updated by one AdamW pass, with or without weight decay.
type segment struct {
	Span
	decay bool
}

// pass is one AdamW launch: a segment's run within one allocation.
type pass struct {
	params, grads, m, v *tensor.Tensor
	decay               bool
}

// NewAdamW allocates zeroed moments laid out as params.
func NewAdamW(params *tensor.Flat, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{Config: cfg}
	var err error
	if o.M, err = tensor.NewFlatLike(params); err != nil {
		return nil, fmt.Errorf("adamw: allocating first moments: %w", err)
	}
	if o.V, err = tensor.NewFlatLike(params); err != nil {
		o.M.Free()
		return nil, fmt.Errorf("adamw: allocating second moments: %w", err)
	}
	be := params.Backend()
	if o.sumSq, err = tensor.New(be, tensor.Float32, 1); err != nil {
		return nil, err
	}
	if len(params.Parts()) > 1 {
		if o.partSq, err = tensor.New(be, tensor.Float32, 1); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// SetNoDecay exempts spans of the parameters from weight decay (nanoGPT's choice for biases and
// norm weights; by default every parameter decays, as in llm.c). The update then runs one pass
// per run of parameters that decay alike, with the same clipping for all.
func (o *AdamW) SetNoDecay(spans []Span) error {
	n := o.M.Len()
	exempt := make([]bool, n)
	for _, s := range spans {
		if s.Off < 0 || s.N < 0 || s.Off+s.N > n {
			return fmt.Errorf("adamw: no-decay span [%d, %d) outside the %d parameters", s.Off, s.Off+s.N, n)
		}
		for i := s.Off; i < s.Off+s.N; i++ {
			exempt[i] = true
		}
	}
	o.segments = o.segments[:0]
	for i := 0; i < n; {
		j := i + 1
		for j < n && exempt[j] == exempt[i] {
			j++
		}
		o.segments = append(o.segments, segment{Span{i, j - i}, !exempt[i]})
		i = j
	}
	o.passesFor = [2]*tensor.Flat{}
	return nil
}

// passesOf lists the launches of an update of params from grads: each segment within each
// allocation it touches.
func (o *AdamW) passesOf(params, grads *tensor.Flat) []pass {
	if o.passesFor == [2]*tensor.Flat{params, grads} {
		return o.passes
	}
	segs := o.segments
	if segs == nil {
		segs = []segment{{Span{0, params.Len()}, true}}
	}
	o.passes = o.passes[:0]
	for _, s := range segs {
		p, g, m, v := params.Range(s.Off, s.N), grads.Range(s.Off, s.N), o.M.Range(s.Off, s.N), o.V.Range(s.Off, s.N)
		for i := range p {
			o.passes = append(o.passes, pass{p[i], g[i], m[i], v[i], s.decay})
		}
	}
	o.passesFor = [2]*tensor.Flat{params, grads}
	return o.passes
}

// apply runs the AdamW passes of one update.
func (o *AdamW) apply(params, grads *tensor.Flat, p tensor.AdamWParams) {
	b := params.Backend()
	wd := p.WeightDecay
	for _, s := range o.passesOf(params, grads) {
		p.WeightDecay = 0
		if s.decay {
			p.WeightDecay = wd
		}
		b.AdamW(s.params, s.grads, s.m, s.v, p)
	}
}

// MeasureGrads puts the gradient's sum of squares in GradSumSq(), on the device: one part's
// after another, in order, so the result does not depend on anything but the layout.
func (o *AdamW) MeasureGrads(grads *tensor.Flat) {
	b := grads.Backend()
	for i, part := range grads.Parts() {
		if i == 0 {
			b.SumSquares(o.sumSq, part)
			continue
		}
		b.SumSquares(o.partSq, part)
		b.Add(o.sumSq, o.sumSq, o.partSq)
	}
}

// Update applies one AdamW step at learning rate lr. The gradient's sum of squares is computed
// on the device; with MaxGradNorm set the clipping happens there too, so no host read is needed.
func (o *AdamW) Update(params, grads *tensor.Flat, lr float32) {
	o.MeasureGrads(grads)
	o.UpdateMeasured(params, grads, lr)
}

// UpdateMeasured is Update for a caller that has already measured the gradient with
// MeasureGrads (to check it before the update): the same step, without measuring twice.
func (o *AdamW) UpdateMeasured(params, grads *tensor.Flat, lr float32) {
	o.Step++
	p := tensor.AdamWParams{LR: lr, Beta1: o.Config.Beta1, Beta2: o.Config.Beta2, Eps: o.Config.Eps,
		WeightDecay: o.Config.WeightDecay, Step: o.Step}
	if o.Config.MaxGradNorm > 0 {
		p.GradSumSq, p.MaxNorm = o.sumSq, o.Config.MaxGradNorm
	}
	o.apply(params, grads, p)
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
