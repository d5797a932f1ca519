package rl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// ValueHeadConfig configures PPO's critic: a Linear C->1 on the model's final hidden states.
type ValueHeadConfig struct {
	// Init is "zero" (weights and bias 0), "constant" (every weight InitValue, bias 0, like
	// VALUE_HEAD_INIT) or "random" (weights N(0, InitValue^2), bias 0).
	Init string `json:"value_init"`
	// InitValue is the constant for "constant" and the standard deviation for "random".
	InitValue float64 `json:"value_init_value"`
	// Dropout is the probability of zeroing a hidden feature before the head while training
	// (like CRITIC_DROPOUT_PROB); in [0, 1). Values for the rollout are computed without it.
	Dropout float64 `json:"value_dropout"`
	// Detach stops the value loss's gradient at the hidden states, so only the head learns
	// from it and the shared trunk follows the policy loss alone.
	Detach bool `json:"value_detach"`
	// Seed draws the random initialisation and the dropout masks.
	Seed uint64 `json:"value_seed"`
}

// DefaultValueHeadConfig is a zero-initialised head without dropout.
func DefaultValueHeadConfig() ValueHeadConfig {
	return ValueHeadConfig{Init: "zero", InitValue: 0.01, Seed: 1}
}

// Validate names the first bad field.
func (c ValueHeadConfig) Validate() error {
	switch c.Init {
	case "zero", "constant", "random":
	default:
		return fmt.Errorf("value_init %q: want zero, constant or random", c.Init)
	}
	if math.IsNaN(c.InitValue) || math.IsInf(c.InitValue, 0) {
		return fmt.Errorf("value_init_value %v: want a finite number", c.InitValue)
	}
	if c.Init == "random" && !(c.InitValue > 0) {
		return fmt.Errorf("value_init_value %v: the random init's standard deviation must be > 0", c.InitValue)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("value_dropout %v: want a value in [0, 1)", c.Dropout)
	}
	return nil
}

// ValueHead is values = dropout(hidden) @ w^T + b with w (1, C), b (1), its parameters in one
// flat buffer [w..., b] with its own AdamW.
type ValueHead struct {
	Config ValueHeadConfig
	C      int
	Params *tensor.Flat // C+1
	Grads  *tensor.Flat // C+1
	Opt    *optim.AdamW

	w, b    *autograd.Var
	out     *autograd.Var  // (N, 1) values, sized for the largest N seen
	dropped *autograd.Var  // (N, C) after dropout
	mask    *tensor.Tensor // (N*C)
	cap     int
}

// NewValueHead allocates and initialises a head for C channels on backend be.
func NewValueHead(be tensor.Backend, C int, cfg ValueHeadConfig, opt optim.AdamWConfig) (*ValueHead, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if C < 1 {
		return nil, fmt.Errorf("value head: %d channels", C)
	}
	vh := &ValueHead{Config: cfg, C: C}
	var err error
	if vh.Params, err = tensor.NewFlat(be, []int{C + 1}); err != nil {
		return nil, err
	}
	if vh.Grads, err = tensor.NewFlatLike(vh.Params); err != nil {
		return nil, err
	}
	if vh.Opt, err = optim.NewAdamW(vh.Params, opt); err != nil {
		return nil, fmt.Errorf("value head: %w", err)
	}
	vh.w = &autograd.Var{Value: vh.Params.View(0, 1, C), Grad: vh.Grads.View(0, 1, C)}
	vh.b = &autograd.Var{Value: vh.Params.View(C, 1), Grad: vh.Grads.View(C, 1)}
	p := make([]float32, C+1)
	switch cfg.Init {
	case "constant":
		for i := 0; i < C; i++ {
			p[i] = float32(cfg.InitValue)
		}
	case "random":
		r := rng.New(cfg.Seed)
		for i := 0; i < C; i++ {
			p[i] = float32(cfg.InitValue * r.Normal())
		}
	}
	return vh, vh.SetParams(p)
}

// SetParams uploads [w..., b].
func (vh *ValueHead) SetParams(p []float32) error {
	if len(p) != vh.C+1 {
		return fmt.Errorf("value head: %d values for a head of %d", len(p), vh.C+1)
	}
	return vh.Params.Upload(p)
}

// ParamsToHost downloads [w..., b].
func (vh *ValueHead) ParamsToHost() ([]float32, error) { return vh.Params.ToHost() }

func (vh *ValueHead) ensure(n int) error {
	if n <= vh.cap {
		return nil
	}
	be := vh.Params.Backend()
	for _, t := range []*autograd.Var{vh.out, vh.dropped} {
		if t != nil {
			be.Free(t.Value.Storage)
			be.Free(t.Grad.Storage)
		}
	}
	if vh.mask != nil {
		be.Free(vh.mask.Storage)
	}
	var err error
	if vh.out, err = autograd.NewVar(be, true, n, 1); err != nil {
		return err
	}
	if vh.Config.Dropout > 0 {
		if vh.dropped, err = autograd.NewVar(be, true, n, vh.C); err != nil {
			return err
		}
		if vh.mask, err = tensor.New(be, tensor.Float32, n*vh.C); err != nil {
			return err
		}
	}
	vh.cap = n
	return nil
}

// Forward computes the values of n hidden rows (n, C). With train, dropout is applied with a
// mask keyed by seed; the backward reaches hidden unless detach or the config's Detach is set.
// The returned Var (n) is reused by the next call.
func (vh *ValueHead) Forward(tp *autograd.Tape, hidden *autograd.Var, n int, train bool, seed uint64, detach bool) (*autograd.Var, error) {
	if err := vh.ensure(n); err != nil {
		return nil, fmt.Errorf("value head: %w", err)
	}
	be := vh.Params.Backend()
	if tp.Recording() {
		be.Fill(vh.out.Grad, 0)
		if vh.dropped != nil {
			be.Fill(vh.dropped.Grad, 0)
		}
	}
	in := hidden.View(0, n, vh.C)
	if detach || vh.Config.Detach {
		in = &autograd.Var{Value: in.Value}
	}
	if train && vh.Config.Dropout > 0 {
		d := vh.dropped.View(0, n, vh.C)
		autograd.Dropout(tp, d, vh.mask.View(0, n*vh.C), in, float32(vh.Config.Dropout), seed)
		in = d
	}
	out := vh.out.View(0, n, 1)
	autograd.MatMul(tp, out, in, vh.w, vh.b, tensor.MatMulParams{M: n, N: 1, K: vh.C, TransB: true})
	return out.View(0, n), nil
}

// Update applies one AdamW step to the head's accumulated gradients and clears them.
func (vh *ValueHead) Update(lr float32) (gradNorm float32, err error) {
	g, err := vh.measure()
	vh.apply(lr)
	return g, err
}

// measure returns the norm of the head's accumulated gradients, for a check before apply.
func (vh *ValueHead) measure() (float32, error) {
	vh.Opt.MeasureGrads(vh.Grads)
	return vh.Opt.GradNorm()
}

// apply takes the AdamW step measure measured and clears the gradients.
func (vh *ValueHead) apply(lr float32) {
	vh.Opt.UpdateMeasured(vh.Params, vh.Grads, lr)
	vh.Grads.Fill(0)
}

// ZeroGrad clears the head's gradients.
func (vh *ValueHead) ZeroGrad() { vh.Grads.Fill(0) }

// Checkpoint keys of a value head inside a checkpoint's Extra and Meta.
const (
	ValueHeadExtra = "value_head"
	ValueHeadMeta  = "value_head_config"
)

// MetaJSON returns the head's config as stored in a checkpoint.
func (vh *ValueHead) MetaJSON() string {
	b, _ := json.Marshal(struct {
		ValueHeadConfig
		Channels int `json:"channels"`
	}{vh.Config, vh.C})
	return string(b)
}
