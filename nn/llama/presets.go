package llama

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// presets are the shapes of real models (random weights) and small ones for tests and demos.
var presets = map[string]Config{
	// Qwen2.5-0.5B(-Instruct)'s shape: TRL's quick-start model.
	"qwen2.5-0.5b": {ModelType: "qwen2", Architecture: "Qwen2ForCausalLM", Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64,
		Intermediate: 4864, Vocab: 151936, MaxPositions: 32768, RMSNormEps: 1e-6, RopeTheta: 1e6, AttentionBias: true, TieEmbeddings: true,
		EOS: []int{151645}},
	// Qwen3-0.6B's shape: q/k norms, head_dim 128 with 16 heads over a hidden size of 1024.
	"qwen3-0.6b": {ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128,
		Intermediate: 3072, Vocab: 151936, MaxPositions: 40960, RMSNormEps: 1e-6, RopeTheta: 1e6, QKNorm: true, TieEmbeddings: true,
		EOS: []int{151645}},
	// Llama 3.2 1B's shape with its llama3 rope scaling.
	"llama3.2-1b": {ModelType: "llama", Architecture: "LlamaForCausalLM", Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64,
		Intermediate: 8192, Vocab: 128256, MaxPositions: 131072, RMSNormEps: 1e-5, RopeTheta: 500000, TieEmbeddings: true,
		RopeScaling: &RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192},
		BOS:         []int{128000}, EOS: []int{128001}},
	// Small shapes that train in seconds on a CPU, with GPT-2's vocabulary size so the GPT-2
	// tokenizer can drive them.
	"qwen3-tiny": {ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32,
		Intermediate: 384, Vocab: 50257, MaxPositions: 1024, RMSNormEps: 1e-6, RopeTheta: 1e6, QKNorm: true, TieEmbeddings: true,
		EOS: []int{50256}},
	"llama-tiny": {ModelType: "llama", Architecture: "LlamaForCausalLM", Hidden: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32,
		Intermediate: 384, Vocab: 50257, MaxPositions: 1024, RMSNormEps: 1e-5, RopeTheta: 10000, TieEmbeddings: false,
		EOS: []int{50256}},
}

// PresetNames lists the presets, smallest first.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		pi, pj := presets[names[i]].NumParams(), presets[names[j]].NumParams()
		return pi < pj || pi == pj && names[i] < names[j]
	})
	return names
}

// Preset returns a named shape.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("llama: no preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	c.TorchDType = "float32"
	return c, nil
}

// InitRandom draws the weights from seed as Hugging Face initialises these models: every
// matrix and embedding N(0, 0.02), biases 0, norm weights 1.
func (m *Model) InitRandom(seed uint64) error {
	r := rng.New(seed)
	p := make([]float32, m.Config.NumParams())
	for _, s := range m.Config.ParamSpecs() {
		dst := p[s.Offset : s.Offset+s.Numel()]
		switch {
		case strings.HasSuffix(s.Name, "norm.weight"):
			for i := range dst {
				dst[i] = 1
			}
		case strings.HasSuffix(s.Name, ".bias"):
		default:
			for i := range dst {
				dst[i] = float32(0.02 * r.Normal())
			}
		}
	}
	return m.Params.Upload(p)
}
