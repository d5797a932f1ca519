package llama

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/vkgrad/vkgrad/internal/modelfile"
)

// Config is what a Llama-family config.json says about the model's shape and math.
type Config struct {
	ModelType     string // llama, qwen2, qwen3
	Architecture  string // LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM
	Hidden        int    // hidden_size
	Layers        int    // num_hidden_layers
	Heads         int    // num_attention_heads
	KVHeads       int    // num_key_value_heads (grouped-query attention)
	HeadDim       int    // head_dim, or hidden_size / num_attention_heads when absent
	Intermediate  int    // intermediate_size of the SiLU-gated MLP
	Vocab         int    // vocab_size
	MaxPositions  int    // max_position_embeddings
	RMSNormEps    float64
	RopeTheta     float64
	RopeScaling   *RopeScaling // nil: none
	AttentionBias bool         // q/k/v projections have a bias (always for Qwen2)
	QKNorm        bool         // per-head RMSNorm of q and k before RoPE (Qwen3)
	TieEmbeddings bool         // the output projection is the token embedding
	TorchDType    string       // how the weights are stored: float32, bfloat16, float16
	BOS           []int
	EOS           []int
}

// RopeScaling is a rope_scaling entry of type llama3 or linear.
type RopeScaling struct {
	Type                          string  // "llama3" or "linear"
	Factor                        float64 // both
	LowFreqFactor, HighFreqFactor float64 // llama3
	OriginalMaxPositions          int     // llama3: original_max_position_embeddings
}

// rawConfig is config.json as written; pointers tell a missing key from a zero.
type rawConfig struct {
	ModelType        string          `json:"model_type"`
	Architectures    []string        `json:"architectures"`
	Hidden           int             `json:"hidden_size"`
	Layers           int             `json:"num_hidden_layers"`
	Heads            int             `json:"num_attention_heads"`
	KVHeads          *int            `json:"num_key_value_heads"`
	HeadDim          *int            `json:"head_dim"`
	Intermediate     int             `json:"intermediate_size"`
	Vocab            int             `json:"vocab_size"`
	MaxPositions     int             `json:"max_position_embeddings"`
	RMSNormEps       float64         `json:"rms_norm_eps"`
	RopeTheta        *float64        `json:"rope_theta"`
	RopeScaling      json.RawMessage `json:"rope_scaling"`
	AttentionBias    *bool           `json:"attention_bias"`
	MLPBias          bool            `json:"mlp_bias"`
	HiddenAct        string          `json:"hidden_act"`
	TieEmbeddings    bool            `json:"tie_word_embeddings"`
	TorchDType       string          `json:"torch_dtype"`
	UseSlidingWindow bool            `json:"use_sliding_window"`
	NumExperts       int             `json:"num_experts"`
	NumLocalExperts  int             `json:"num_local_experts"`
	BOS              json.RawMessage `json:"bos_token_id"`
	EOS              json.RawMessage `json:"eos_token_id"`
}

var architectures = map[string]string{
	"llama": "LlamaForCausalLM",
	"qwen2": "Qwen2ForCausalLM",
	"qwen3": "Qwen3ForCausalLM",
}

// ReadConfig reads dir/config.json, and the EOS ids of dir/generation_config.json when that
// file exists (it is what generation stops on). Unsupported features are refused by name.
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := modelfile.Read(path, modelfile.Config)
	if err != nil {
		return Config{}, fmt.Errorf("llama: %w", err)
	}
	var raw rawConfig
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("llama: %s: %w", path, err)
	}
	cfg, err := raw.config()
	if err != nil {
		return Config{}, fmt.Errorf("llama: %s: %w", path, err)
	}
	if err := readGenerationConfig(dir, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func (r rawConfig) config() (Config, error) {
	arch, ok := architectures[r.ModelType]
	if r.ModelType == "" {
		return Config{}, errors.New("no model_type, so the model's architecture is unknown (want llama, qwen2 or qwen3)")
	}
	if !ok {
		return Config{}, fmt.Errorf("model_type %q is not supported (want llama, qwen2 or qwen3)", r.ModelType)
	}
	if len(r.Architectures) > 0 && !slices.Contains(r.Architectures, arch) {
		return Config{}, fmt.Errorf("architectures %v: want %s for model_type %q", r.Architectures, arch, r.ModelType)
	}
	switch {
	case r.NumExperts > 0 || r.NumLocalExperts > 0:
		return Config{}, errors.New("mixture-of-experts models (num_experts) are not supported")
	case r.UseSlidingWindow:
		return Config{}, errors.New("use_sliding_window is true: sliding-window attention is not supported")
	case r.MLPBias:
		return Config{}, errors.New("mlp_bias is true: MLP biases are not supported")
	case r.HiddenAct != "" && r.HiddenAct != "silu":
		return Config{}, fmt.Errorf("hidden_act %q is not supported (want silu)", r.HiddenAct)
	}
	c := Config{
		ModelType: r.ModelType, Architecture: arch, Hidden: r.Hidden, Layers: r.Layers, Heads: r.Heads,
		Intermediate: r.Intermediate, Vocab: r.Vocab, MaxPositions: r.MaxPositions, RMSNormEps: r.RMSNormEps,
		RopeTheta: 10000, QKNorm: r.ModelType == "qwen3", TieEmbeddings: r.TieEmbeddings, TorchDType: r.TorchDType,
		// Qwen2 always has q/k/v biases and its configs carry no attention_bias key.
		AttentionBias: r.ModelType == "qwen2",
	}
	if r.AttentionBias != nil {
		c.AttentionBias = *r.AttentionBias
	}
	if r.RopeTheta != nil {
		c.RopeTheta = *r.RopeTheta
	}
	c.KVHeads = c.Heads
	if r.KVHeads != nil {
		c.KVHeads = *r.KVHeads
	}
	if r.Heads > 0 {
		c.HeadDim = r.Hidden / r.Heads
	}
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	}
	var err error
	if c.RopeScaling, err = parseRopeScaling(r.RopeScaling); err != nil {
		return Config{}, err
	}
	if c.BOS, err = tokenIDs("bos_token_id", r.BOS); err != nil {
		return Config{}, err
	}
	if c.EOS, err = tokenIDs("eos_token_id", r.EOS); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Validate checks the shape is one the model can be built with.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.Hidden}, {"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads},
		{"num_key_value_heads", c.KVHeads}, {"head_dim", c.HeadDim}, {"intermediate_size", c.Intermediate}, {"vocab_size", c.Vocab}} {
		if f.v <= 0 {
			return fmt.Errorf("%s %d must be positive", f.name, f.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.Heads, c.KVHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("head_dim %d must be even for rotary embeddings", c.HeadDim)
	}
	if !(c.RMSNormEps > 0) || !(c.RopeTheta > 0) {
		return fmt.Errorf("rms_norm_eps %v and rope_theta %v must be positive", c.RMSNormEps, c.RopeTheta)
	}
	for _, id := range append(append([]int(nil), c.BOS...), c.EOS...) {
		if id < 0 || id >= c.Vocab {
			return fmt.Errorf("token id %d in bos/eos_token_id is outside the vocabulary of %d", id, c.Vocab)
		}
	}
	return nil
}

func parseRopeScaling(raw json.RawMessage) (*RopeScaling, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var r struct {
		RopeType       string  `json:"rope_type"`
		Type           string  `json:"type"` // the older key
		Factor         float64 `json:"factor"`
		LowFreqFactor  float64 `json:"low_freq_factor"`
		HighFreqFactor float64 `json:"high_freq_factor"`
		Original       int     `json:"original_max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("rope_scaling: %w", err)
	}
	t := r.RopeType
	if t == "" {
		t = r.Type
	}
	s := &RopeScaling{Type: t, Factor: r.Factor, LowFreqFactor: r.LowFreqFactor, HighFreqFactor: r.HighFreqFactor, OriginalMaxPositions: r.Original}
	switch t {
	case "default":
		return nil, nil
	case "linear":
		if !(r.Factor > 0) {
			return nil, fmt.Errorf("rope_scaling linear: factor %v must be positive", r.Factor)
		}
	case "llama3":
		if !(r.Factor > 0) || !(r.LowFreqFactor > 0) || !(r.HighFreqFactor > r.LowFreqFactor) || r.Original <= 0 {
			return nil, fmt.Errorf("rope_scaling llama3: factor %v, low_freq_factor %v, high_freq_factor %v, original_max_position_embeddings %d: want positive values with high > low",
				r.Factor, r.LowFreqFactor, r.HighFreqFactor, r.Original)
		}
	default:
		return nil, fmt.Errorf("rope_scaling of type %q is not supported (want llama3 or linear)", t)
	}
	return s, nil
}

// tokenIDs reads a token id field that may be null, an integer or a list of integers.
func tokenIDs(name string, raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if json.Unmarshal(raw, &one) == nil {
		return []int{one}, nil
	}
	var list []int
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s %s: want an integer or a list of integers", name, raw)
	}
	return list, nil
}

// readGenerationConfig takes the EOS ids from generation_config.json when it has them.
func readGenerationConfig(dir string, c *Config) error {
	path := filepath.Join(dir, "generation_config.json")
	b, err := modelfile.Read(path, modelfile.Config)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return fmt.Errorf("llama: %s: %w", path, err)
	}
	eos, err := tokenIDs("eos_token_id", g.EOS)
	if err != nil {
		return fmt.Errorf("llama: %s: %w", path, err)
	}
	if len(eos) > 0 {
		c.EOS = eos
	}
	return c.Validate()
}
