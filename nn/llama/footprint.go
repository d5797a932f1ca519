package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Footprint is the device memory a model needs for a (B, T) batch, in bytes.
type Footprint struct {
	B, T      int
	Training  bool
	Recompute bool // the activations are laid out for Model.Recompute
	// Params are the weights (and adapters), Grads and Optimizer (AdamW's two moments) those of
	// what trains: every weight, or the adapters.
	Params, Grads, Optimizer int64
	// Activations are the forward values (and their gradients when training), the lm head's
	// chunk buffers and the rotary table.
	Activations int64
}

// Total is the sum of the parts.
func (f Footprint) Total() int64 { return f.Params + f.Grads + f.Optimizer + f.Activations }

// FootprintOptions say how a model runs, beyond its shape and batch, for EstimateFootprintWith.
type FootprintOptions struct {
	Training  bool        // with gradients and AdamW, else a forward pass
	Recompute bool        // Model.Recompute
	LoRA      *LoRAConfig // adapters, when set
}

// EstimateFootprint adds up what training (or, with training false, a forward pass) of c at
// (B, T) allocates on be, with LoRA adapters when lo is set: the same layout the model uses,
// counted instead of allocated.
func EstimateFootprint(be tensor.Backend, c Config, B, T int, training bool, lo *LoRAConfig) (Footprint, error) {
	return EstimateFootprintWith(be, c, B, T, FootprintOptions{Training: training, LoRA: lo})
}

// EstimateFootprintWith is EstimateFootprint with the options o.
func EstimateFootprintWith(be tensor.Backend, c Config, B, T int, o FootprintOptions) (Footprint, error) {
	training, lo := o.Training, o.LoRA
	if err := c.Validate(); err != nil {
		return Footprint{}, err
	}
	if B <= 0 || T <= 0 || c.MaxPositions > 0 && T > c.MaxPositions {
		return Footprint{}, fmt.Errorf("llama: footprint of B=%d T=%d: want B >= 1 and 1 <= T <= %d", B, T, c.MaxPositions)
	}
	f := Footprint{B: B, T: T, Training: training, Recompute: o.Recompute, Params: 4 * int64(c.NumParams())}
	trained := f.Params
	var adapters *lora
	if lo != nil {
		if err := lo.Validate(); err != nil {
			return Footprint{}, err
		}
		n := 0
		for _, s := range c.LoRASpecs(*lo) {
			n += s.Numel()
		}
		trained = 4 * int64(n)
		f.Params += trained
		adapters = &lora{cfg: *lo}
	}
	if training {
		f.Grads, f.Optimizer = trained, 2*trained
	}
	rows := max(1, min(B*T, headBudget/c.Vocab))
	f.Activations = trunkActivationBytes(be, c, B, T, training, o.Recompute, adapters) + 2*4*int64(rows*c.Vocab)
	return f, nil
}

// TrunkActivationBytes is what ForwardTrunk lays out for B sequences of T tokens (with room for
// the gradients when withGrad), the adapters' activations included when lo is set: the
// activations and the rotary table, without the lm head's chunks, which a SelectedHead never
// needs.
func TrunkActivationBytes(be tensor.Backend, c Config, B, T int, withGrad bool, lo *LoRAConfig) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if B <= 0 || T <= 0 || c.MaxPositions > 0 && T > c.MaxPositions {
		return 0, fmt.Errorf("llama: activations of B=%d T=%d: want B >= 1 and 1 <= T <= %d", B, T, c.MaxPositions)
	}
	var adapters *lora
	if lo != nil {
		if err := lo.Validate(); err != nil {
			return 0, err
		}
		adapters = &lora{cfg: *lo}
	}
	return trunkActivationBytes(be, c, B, T, withGrad, false, adapters), nil
}

// trunkActivationBytes counts the layout ensureActs allocates, and the rotary table.
func trunkActivationBytes(be tensor.Backend, c Config, B, T int, withGrad, recompute bool, lo *lora) int64 {
	al := &alloc{a: &activations{B: B, T: T, withGrad: withGrad, recompute: recompute}, be: be, counting: true}
	al.a.layout(al, c, lo)
	return al.bytes + 4*int64(T*c.HeadDim)
}
