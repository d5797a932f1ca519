package llama

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
)

// LoRAConfig sets low-rank adapters (PEFT's LoraConfig): each target linear layer W gains
// B·A, A (Rank, in) and B (out, Rank), scaled by Alpha/Rank; only the adapters train.
type LoRAConfig struct {
	Rank    int      `json:"r"`
	Alpha   float64  `json:"lora_alpha"`
	Targets []string `json:"target_modules"` // Hugging Face module names; empty: every linear layer
	Dropout float64  `json:"lora_dropout"`   // on the adapters' input, in training only
}

// LoRAModules are the linear layers adapters can target, by their Hugging Face names.
var LoRAModules = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// Validate names the first bad field.
func (c LoRAConfig) Validate() error {
	switch {
	case c.Rank <= 0:
		return fmt.Errorf("lora: rank %d must be positive", c.Rank)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("lora: alpha %v must be positive and finite", c.Alpha)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("lora: dropout %v must be in [0, 1)", c.Dropout)
	}
	for _, t := range c.Targets {
		if !slices.Contains(LoRAModules, t) {
			return fmt.Errorf("lora: target module %q is not one of %s", t, strings.Join(LoRAModules, ", "))
		}
	}
	return nil
}

func (c LoRAConfig) targets() []string {
	if len(c.Targets) == 0 {
		return LoRAModules
	}
	return c.Targets
}

// adapter is one layer's low-rank update of one linear layer.
type adapter struct {
	A, B    *autograd.Var
	in, out int
}

// lora is a model's adapters: one flat buffer of parameters (and gradients) in spec order.
type lora struct {
	cfg           LoRAConfig
	scale         float32
	specs         []ParamSpec
	params, grads *tensor.Flat
	layers        []map[string]*adapter
	off           bool   // adapters bypassed: the base model (the RL reference)
	dropSeed      uint64 // advanced every recorded forward
}

// moduleShape is a linear layer's (out, in).
func (c Config) moduleShape(module string) (out, in int) {
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	switch module {
	case "q_proj":
		return q, c.Hidden
	case "k_proj", "v_proj":
		return kv, c.Hidden
	case "o_proj":
		return c.Hidden, q
	case "gate_proj", "up_proj":
		return c.Intermediate, c.Hidden
	}
	return c.Hidden, c.Intermediate // down_proj
}

func moduleParent(module string) string {
	if strings.HasSuffix(module, "_proj") && module != "gate_proj" && module != "up_proj" && module != "down_proj" {
		return "self_attn"
	}
	return "mlp"
}

// LoRASpecs lists the adapters' tensors under PEFT's names, in the order of their flat buffer.
func (c Config) LoRASpecs(cfg LoRAConfig) []ParamSpec {
	var out []ParamSpec
	off := 0
	for l := range c.Layers {
		for _, mod := range cfg.targets() {
			o, i := c.moduleShape(mod)
			base := fmt.Sprintf("base_model.model.model.layers.%d.%s.%s.", l, moduleParent(mod), mod)
			out = append(out, ParamSpec{Name: base + "lora_A.weight", Shape: []int{cfg.Rank, i}, Offset: off})
			off += cfg.Rank * i
			out = append(out, ParamSpec{Name: base + "lora_B.weight", Shape: []int{o, cfg.Rank}, Offset: off})
			off += o * cfg.Rank
		}
	}
	return out
}

// EnableLoRA adds adapters, A drawn from seed as PEFT does (uniform in ±1/sqrt(in)) and B
// zero, so the model computes exactly what it did before. From then on the adapters are what
// trains: Trainable returns them, and the base weights need no gradients.
func (m *Model) EnableLoRA(cfg LoRAConfig, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m.lora != nil {
		return fmt.Errorf("lora: the model already has adapters")
	}
	if m.peer != nil {
		return fmt.Errorf("lora: the model shares its activations (ShareActivations), which adapters would change")
	}
	specs := m.Config.LoRASpecs(cfg)
	sizes := specSizes(specs)
	l := &lora{cfg: cfg, scale: float32(cfg.Alpha / float64(cfg.Rank)), specs: specs}
	var err error
	if l.params, err = tensor.NewFlat(m.Backend, sizes); err != nil {
		return fmt.Errorf("lora: allocating adapter parameters: %w", err)
	}
	if l.grads, err = tensor.NewFlatLike(l.params); err != nil {
		l.params.Free()
		return fmt.Errorf("lora: allocating adapter gradients: %w", err)
	}
	n := l.params.Len()
	host := make([]float32, n)
	r := rng.New(seed)
	for _, s := range specs {
		if strings.HasSuffix(s.Name, "lora_A.weight") {
			bound := 1 / math.Sqrt(float64(s.Shape[1]))
			for i := s.Offset; i < s.Offset+s.Numel(); i++ {
				host[i] = float32(bound * (2*r.Float64() - 1))
			}
		}
	}
	if err := l.params.Upload(host); err != nil {
		return err
	}
	l.layers = make([]map[string]*adapter, m.Config.Layers)
	i := 0
	for layer := range l.layers {
		l.layers[layer] = map[string]*adapter{}
		for _, mod := range cfg.targets() {
			a, b := specs[i], specs[i+1]
			i += 2
			out, in := m.Config.moduleShape(mod)
			l.layers[layer][mod] = &adapter{
				A:  &autograd.Var{Value: l.params.View(a.Offset, a.Shape...), Grad: l.grads.View(a.Offset, a.Shape...)},
				B:  &autograd.Var{Value: l.params.View(b.Offset, b.Shape...), Grad: l.grads.View(b.Offset, b.Shape...)},
				in: in, out: out,
			}
		}
	}
	m.lora = l
	if m.acts != nil { // re-laid out with the adapters' activations on the next forward
		m.acts.free(m.Backend)
		m.acts = nil
	}
	return nil
}

// LoRA returns the adapters' settings and whether the model has any.
func (m *Model) LoRA() (LoRAConfig, bool) {
	if m.lora == nil {
		return LoRAConfig{}, false
	}
	return m.lora.cfg, true
}

// SetAdapters switches the adapters on or off; off, the model is its base (the reference of RL).
func (m *Model) SetAdapters(on bool) {
	if m.lora != nil {
		m.lora.off = !on
	}
}

// Trainable returns the parameters training updates and their gradients: the adapters when
// the model has them, else every weight (after EnableGrads).
func (m *Model) Trainable() (params, grads *tensor.Flat) {
	if m.lora != nil {
		return m.lora.params, m.lora.grads
	}
	return m.Params, m.Grads
}

// ZeroTrainableGrads clears the gradients of what trains.
func (m *Model) ZeroTrainableGrads() {
	if _, g := m.Trainable(); g != nil {
		g.Fill(0)
	}
}

// LoRASpecs lists the adapters' tensors (PEFT names) in the order of their flat buffer.
func (m *Model) LoRASpecs() []ParamSpec {
	if m.lora == nil {
		return nil
	}
	return m.lora.specs
}

// MergeLoRA folds each adapter into its layer, W += (Alpha/Rank)·B·A, and removes the
// adapters: the model is then a plain one to export.
func (m *Model) MergeLoRA() error {
	l := m.lora
	if l == nil {
		return fmt.Errorf("lora: the model has no adapters to merge")
	}
	for layer, mods := range l.layers {
		for mod, a := range mods {
			w := m.baseWeight(layer, mod)
			scaledB, err := tensor.New(m.Backend, tensor.Float32, a.out, l.cfg.Rank)
			if err != nil {
				return err
			}
			m.Backend.Copy(scaledB, a.B.Value)
			m.Backend.Scale(scaledB, l.scale)
			m.Backend.MatMul(w, scaledB, a.A.Value, nil, tensor.MatMulParams{M: a.out, N: a.in, K: l.cfg.Rank, Accumulate: true})
			m.Backend.Free(scaledB.Storage)
		}
	}
	if err := m.Backend.Sync(); err != nil {
		return err
	}
	l.params.Free()
	l.grads.Free()
	m.lora = nil
	if m.acts != nil {
		m.acts.free(m.Backend)
		m.acts = nil
	}
	return nil
}

// baseWeight is the weight tensor of a layer's linear module.
func (m *Model) baseWeight(layer int, module string) *tensor.Tensor {
	lp := &m.layers[layer]
	v := map[string]*autograd.Var{"q_proj": lp.wq, "k_proj": lp.wk, "v_proj": lp.wv, "o_proj": lp.wo,
		"gate_proj": lp.wgate, "up_proj": lp.wup, "down_proj": lp.wdown}[module]
	return v.Value
}

// loraActs are one adapter's activations: the input after dropout (shared by the adapters of
// one input), the rank-r projection and its scaled copy.
type loraActs struct {
	xa, xas *autograd.Var
}

// loraInput is one layer input's dropout, shared by the adapters that read it.
type loraInput struct {
	dropped *autograd.Var
	mask    *tensor.Tensor
	drawn   uint64 // the forward whose mask it holds
}

// loraInputs are the layer inputs adapters read (see loraInputOf).
var loraInputs = []string{"attn_in", "attn_out", "mlp_in", "mlp_act"}

// StateParams are the values a checkpoint holds for the model: every weight, then the LoRA
// adapters when it has them (LoRASpecs order).
func (m *Model) StateParams() ([]float32, error) {
	base, err := m.Params.ToHost()
	if err != nil || m.lora == nil {
		return base, err
	}
	adapters, err := m.lora.params.ToHost()
	return append(base, adapters...), err
}

// SetStateParams uploads values laid out as StateParams.
func (m *Model) SetStateParams(v []float32) error {
	n := m.Config.NumParams()
	want := n
	if m.lora != nil {
		want += m.lora.params.Len()
	}
	if len(v) != want {
		if m.lora != nil {
			return fmt.Errorf("%d values for a model of %d weights and %d adapter parameters", len(v), n, want-n)
		}
		return fmt.Errorf("%d values for a model of %d", len(v), n)
	}
	if err := m.Params.Upload(v[:n]); err != nil || m.lora == nil {
		return err
	}
	return m.lora.params.Upload(v[n:])
}
