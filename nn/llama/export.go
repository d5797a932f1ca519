package llama

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// rawConfigOut is the config.json Export writes: the keys Hugging Face's loaders read.
type rawConfigOut struct {
	Architectures    []string       `json:"architectures"`
	ModelType        string         `json:"model_type"`
	Hidden           int            `json:"hidden_size"`
	Layers           int            `json:"num_hidden_layers"`
	Heads            int            `json:"num_attention_heads"`
	KVHeads          int            `json:"num_key_value_heads"`
	HeadDim          int            `json:"head_dim"`
	Intermediate     int            `json:"intermediate_size"`
	Vocab            int            `json:"vocab_size"`
	MaxPositions     int            `json:"max_position_embeddings"`
	RMSNormEps       float64        `json:"rms_norm_eps"`
	RopeTheta        float64        `json:"rope_theta"`
	RopeScaling      map[string]any `json:"rope_scaling"`
	AttentionBias    bool           `json:"attention_bias"`
	HiddenAct        string         `json:"hidden_act"`
	TieEmbeddings    bool           `json:"tie_word_embeddings"`
	TorchDType       string         `json:"torch_dtype"`
	UseSlidingWindow bool           `json:"use_sliding_window"`
	BOS              any            `json:"bos_token_id"`
	EOS              any            `json:"eos_token_id"`
}

func ids(v []int) any {
	switch len(v) {
	case 0:
		return nil
	case 1:
		return v[0]
	}
	return v
}

// Export writes the model as a Hugging Face directory: config.json, generation_config.json and
// model.safetensors, in float32 or, with dtype "bfloat16", rounded to bfloat16. Files are
// written to temporary names and renamed, so a crash leaves no half-written file.
func (m *Model) Export(dir, dtype string) error {
	st := safetensors.F32
	switch dtype {
	case "", "float32":
		dtype = "float32"
	case "bfloat16":
		st = safetensors.BF16
	default:
		return fmt.Errorf("llama: export dtype %q: want float32 or bfloat16", dtype)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	params, err := m.Params.ToHost()
	if err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, s := range m.Config.ParamSpecs() {
		ts = append(ts, safetensors.Tensor{Name: s.Name, DType: st, Shape: s.Shape, F32Data: params[s.Offset : s.Offset+s.Numel()]})
	}
	c := m.Config
	cfg := rawConfigOut{
		Architectures: []string{c.Architecture}, ModelType: c.ModelType, Hidden: c.Hidden, Layers: c.Layers,
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Intermediate: c.Intermediate, Vocab: c.Vocab,
		MaxPositions: c.MaxPositions, RMSNormEps: c.RMSNormEps, RopeTheta: c.RopeTheta, AttentionBias: c.AttentionBias,
		HiddenAct: "silu", TieEmbeddings: c.TieEmbeddings, TorchDType: dtype, BOS: ids(c.BOS), EOS: ids(c.EOS),
	}
	if s := c.RopeScaling; s != nil {
		cfg.RopeScaling = map[string]any{"rope_type": s.Type, "factor": s.Factor}
		if s.Type == "llama3" {
			cfg.RopeScaling["low_freq_factor"], cfg.RopeScaling["high_freq_factor"] = s.LowFreqFactor, s.HighFreqFactor
			cfg.RopeScaling["original_max_position_embeddings"] = s.OriginalMaxPositions
		}
	}
	gen := map[string]any{"bos_token_id": ids(c.BOS), "eos_token_id": ids(c.EOS)}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "generation_config.json"), gen); err != nil {
		return err
	}
	err = atomicfile.Write(filepath.Join(dir, "model.safetensors"), 0o666, func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"format": "pt"})
	})
	if err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o666); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}
