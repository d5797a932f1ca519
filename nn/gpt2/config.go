// Package gpt2 is the GPT-2 language model, computed with llm.c's exact math on any backend.
//
// A [Config] gives a model's shape, from [Preset] by name ([PresetNames]) or by hand, and
// [Config.ParamSpecs] its parameter tensors in llm.c's order. [New] builds a [Model] on a
// [tensor.Backend], with its parameters in one flat buffer in that order; its forward and
// backward run on an [autograd.Tape]. [Model.NewDecoder] returns a key/value-cache [Decoder]
// for sampling, and [Model.NewSelectedHead] a [SelectedHead] that computes log-probs at chosen
// positions only. [EstimateFootprint] and [LargestBatch] size batches to a memory budget;
// [Model.Recompute] trades a little backward compute for less activation memory, with the same
// bits ([EstimateFootprintWith] sizes it).
package gpt2

import (
	"fmt"
	"sort"
	"strings"
)

// Config is a GPT-2 shape. VocabSize is the real vocabulary; PaddedVocabSize rounds it up so
// the lm-head matmul has a friendly size (llm.c pads 50257 to 50304). The padded rows of the
// token embedding are zero and never receive a loss.
type Config struct {
	MaxSeqLen       int `json:"max_seq_len"`
	VocabSize       int `json:"vocab_size"`
	PaddedVocabSize int `json:"padded_vocab_size"`
	NumLayers       int `json:"num_layers"`
	NumHeads        int `json:"num_heads"`
	Channels        int `json:"channels"`
}

// Validate reports the first field that makes the config unusable.
func (c Config) Validate() error {
	switch {
	case c.MaxSeqLen <= 0:
		return fmt.Errorf("gpt2 config: max_seq_len %d must be positive", c.MaxSeqLen)
	case c.VocabSize <= 0:
		return fmt.Errorf("gpt2 config: vocab_size %d must be positive", c.VocabSize)
	case c.PaddedVocabSize < c.VocabSize:
		return fmt.Errorf("gpt2 config: padded_vocab_size %d is smaller than vocab_size %d", c.PaddedVocabSize, c.VocabSize)
	case c.NumLayers <= 0:
		return fmt.Errorf("gpt2 config: num_layers %d must be positive", c.NumLayers)
	case c.NumHeads <= 0:
		return fmt.Errorf("gpt2 config: num_heads %d must be positive", c.NumHeads)
	case c.Channels <= 0 || c.Channels%c.NumHeads != 0:
		return fmt.Errorf("gpt2 config: channels %d must be a positive multiple of num_heads %d", c.Channels, c.NumHeads)
	}
	return nil
}

func (c Config) String() string {
	return fmt.Sprintf("L=%d NH=%d C=%d maxT=%d V=%d Vp=%d", c.NumLayers, c.NumHeads, c.Channels, c.MaxSeqLen, c.VocabSize, c.PaddedVocabSize)
}

// ParamSpec names one parameter tensor and its shape.
type ParamSpec struct {
	Name  string
	Shape []int
}

// Numel is the number of elements of the parameter.
func (p ParamSpec) Numel() int {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// ParamSpecs lists the 16 parameter tensors in llm.c's order, which is also the order of the
// flat parameter buffer, the llm.c checkpoint and the gradient buffer. Per-layer tensors carry
// a leading L dimension.
func (c Config) ParamSpecs() []ParamSpec {
	L, C, Vp, T := c.NumLayers, c.Channels, c.PaddedVocabSize, c.MaxSeqLen
	return []ParamSpec{
		{"wte", []int{Vp, C}},
		{"wpe", []int{T, C}},
		{"ln1w", []int{L, C}},
		{"ln1b", []int{L, C}},
		{"qkvw", []int{L, 3 * C, C}},
		{"qkvb", []int{L, 3 * C}},
		{"attprojw", []int{L, C, C}},
		{"attprojb", []int{L, C}},
		{"ln2w", []int{L, C}},
		{"ln2b", []int{L, C}},
		{"fcw", []int{L, 4 * C, C}},
		{"fcb", []int{L, 4 * C}},
		{"fcprojw", []int{L, C, 4 * C}},
		{"fcprojb", []int{L, C}},
		{"lnfw", []int{C}},
		{"lnfb", []int{C}},
	}
}

// paramPieces are the sizes and names of the tensors the model views its parameters as, in
// order: the per-layer specs' layer slices one by one, so that none is split between
// allocations.
func (c Config) paramPieces() (sizes []int, names []string) {
	for _, s := range c.ParamSpecs() {
		switch s.Name {
		case "wte", "wpe", "lnfw", "lnfb":
			sizes, names = append(sizes, s.Numel()), append(names, s.Name)
			continue
		}
		for l := range c.NumLayers {
			sizes, names = append(sizes, s.Numel()/c.NumLayers), append(names, fmt.Sprintf("%s of layer %d", s.Name, l))
		}
	}
	return sizes, names
}

// NumParams is the total number of parameters, padded embedding rows included.
func (c Config) NumParams() int {
	n := 0
	for _, p := range c.ParamSpecs() {
		n += p.Numel()
	}
	return n
}

// PadVocab rounds a vocabulary size up to a multiple of 128, as llm.c does for 50257 -> 50304.
func PadVocab(v int) int { return (v + 127) / 128 * 128 }

// GPT2Vocab is the size of the GPT-2 BPE vocabulary; token 50256 is <|endoftext|>.
const GPT2Vocab = 50257

func preset(L, NH, C, T, V int) Config {
	return Config{MaxSeqLen: T, VocabSize: V, PaddedVocabSize: PadVocab(V), NumLayers: L, NumHeads: NH, Channels: C}
}

var presets = map[string]Config{
	"gpt2-124m":  preset(12, 12, 768, 1024, GPT2Vocab),
	"gpt2-350m":  preset(24, 16, 1024, 1024, GPT2Vocab),
	"gpt2-774m":  preset(36, 20, 1280, 1024, GPT2Vocab),
	"gpt2-1558m": preset(48, 25, 1600, 1024, GPT2Vocab),
	// Small models with the GPT-2 vocabulary, for the default training run and quick tests.
	// gpt2-micro starts RL on the built-in addition task; it has four 16-wide heads because
	// with two, some seeds never learned when a sum gains a digit, and RL stalled there.
	"gpt2-mini":  preset(4, 4, 128, 128, GPT2Vocab),
	"gpt2-micro": preset(2, 4, 64, 64, GPT2Vocab),
	// A model with a tiny vocabulary, for unit tests and toy tasks.
	"tiny": {MaxSeqLen: 64, VocabSize: 500, PaddedVocabSize: 512, NumLayers: 2, NumHeads: 4, Channels: 64},
}

// Preset returns a named configuration.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown model preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return c, nil
}

// PresetNames lists the preset names, smallest model first.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { // smallest first
		pi, pj := presets[names[i]].NumParams(), presets[names[j]].NumParams()
		return pi < pj || pi == pj && names[i] < names[j]
	})
	return names
}

// MatmulParams counts the parameters that take part in matrix products (the transformer blocks
// and the tied lm head), the N of the usual 6*N FLOPs-per-token estimate.
func (c Config) MatmulParams() int {
	C := c.Channels
	return 12*c.NumLayers*C*C + c.PaddedVocabSize*C
}

// TrainFLOPsPerToken estimates the model FLOPs of one token of a training step (forward and
// backward) at sequence length T: 6*N for the matrix products plus 12*L*C*T for attention.
func (c Config) TrainFLOPsPerToken(T int) float64 {
	return 6*float64(c.MatmulParams()) + 12*float64(c.NumLayers*c.Channels*T)
}
