package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// ParamSpec is one parameter tensor: its Hugging Face name, shape and place in the flat buffer.
type ParamSpec struct {
	Name   string
	Shape  []int
	Offset int
}

// Numel is the number of elements.
func (s ParamSpec) Numel() int { return tensor.Shape(s.Shape).Numel() }

// ParamSpecs lists the parameters in the order of the flat buffer: the embedding, each layer's
// tensors, the final norm and the untied lm head.
func (c Config) ParamSpecs() []ParamSpec {
	shapes := c.Shapes()
	names := []string{"model.embed_tokens.weight"}
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		names = append(names, p+"input_layernorm.weight", p+"self_attn.q_proj.weight")
		if c.AttentionBias {
			names = append(names, p+"self_attn.q_proj.bias")
		}
		names = append(names, p+"self_attn.k_proj.weight")
		if c.AttentionBias {
			names = append(names, p+"self_attn.k_proj.bias")
		}
		names = append(names, p+"self_attn.v_proj.weight")
		if c.AttentionBias {
			names = append(names, p+"self_attn.v_proj.bias")
		}
		if c.QKNorm {
			names = append(names, p+"self_attn.q_norm.weight", p+"self_attn.k_norm.weight")
		}
		names = append(names, p+"self_attn.o_proj.weight", p+"post_attention_layernorm.weight",
			p+"mlp.gate_proj.weight", p+"mlp.up_proj.weight", p+"mlp.down_proj.weight")
	}
	names = append(names, "model.norm.weight")
	if !c.TieEmbeddings {
		names = append(names, "lm_head.weight")
	}
	out := make([]ParamSpec, len(names))
	off := 0
	for i, n := range names {
		out[i] = ParamSpec{Name: n, Shape: shapes[n], Offset: off}
		off += out[i].Numel()
	}
	return out
}

// specSizes are the sizes of specs' tensors, in order: the pieces of a flat vector of them.
func specSizes(specs []ParamSpec) []int {
	out := make([]int, len(specs))
	for i, s := range specs {
		out[i] = s.Numel()
	}
	return out
}

// NumParams is the number of parameter values.
func (c Config) NumParams() int {
	n := 0
	for _, s := range c.ParamSpecs() {
		n += s.Numel()
	}
	return n
}

// TrainFLOPsPerToken is the matrix-product work of a training step per token at sequence
// length T: 6 per weight used (the forward and the two backward products), the lm head twice
// more for its recomputation in the chunked loss, and attention's score and mix products (12 per
// layer per query head dimension per attended position, T/2 on average).
func (c Config) TrainFLOPsPerToken(T int) float64 {
	head := float64(c.Vocab * c.Hidden)
	weights := float64(c.NumParams()) - head // the embedding lookup is free
	if c.TieEmbeddings {
		weights += head // the tied head is multiplied
	}
	attn := 12 * float64(c.Layers*c.Heads*c.HeadDim) * float64(T) / 2
	return 6*weights + 2*head + attn
}
