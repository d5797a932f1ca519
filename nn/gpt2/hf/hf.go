// Package hf converts GPT-2 weights between Hugging Face's safetensors layout and vkgrad's own.
//
// [Import] reads a Hugging Face GPT-2 model.safetensors into vkgrad's flat parameter buffer in
// llm.c's order, deriving the [gpt2.Config] from the tensor shapes ([ImportOptions] gives the
// head count where no config.json does). [Export] and [ExportGPT2] write the other way,
// [WriteConfig] the config.json that transformers needs beside it, and [GPT2Tokenizer] GPT-2's
// tokenizer as a tokenizer.json.
//
// Hugging Face's GPT-2 uses Conv1D layers whose weights are stored (in, out); llm.c stores
// linear weights (out, in), so c_attn, c_proj, c_fc and mlp.c_proj are transposed on the way
// in and out. Inside vkgrad the vocabulary is padded to a multiple of 128 with zero rows
// ([gpt2.PadVocab]); exported files hold the vocabulary unpadded.
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// ImportOptions tune Import.
type ImportOptions struct {
	// NumHeads is the number of attention heads, which the weights do not record. A config.json
	// beside the file takes precedence (and must agree when both are given); when neither is
	// given, the GPT-2 size table decides from the width (768→12, 1024→16, 1280→20, 1600→25).
	NumHeads int
}

// headsBySize is the GPT-2 family's head count by width.
var headsBySize = map[int]int{768: 12, 1024: 16, 1280: 20, 1600: 25}

// layerTensor is one per-layer tensor of the HF layout.
type layerTensor struct {
	suffix    string // after "h.{i}."
	param     string // llm.c parameter it lands in
	transpose bool   // Conv1D weight stored (in, out)
	shape     func(C int) []int
}

var layerTensors = []layerTensor{
	{"ln_1.weight", "ln1w", false, func(C int) []int { return []int{C} }},
	{"ln_1.bias", "ln1b", false, func(C int) []int { return []int{C} }},
	{"attn.c_attn.weight", "qkvw", true, func(C int) []int { return []int{C, 3 * C} }},
	{"attn.c_attn.bias", "qkvb", false, func(C int) []int { return []int{3 * C} }},
	{"attn.c_proj.weight", "attprojw", true, func(C int) []int { return []int{C, C} }},
	{"attn.c_proj.bias", "attprojb", false, func(C int) []int { return []int{C} }},
	{"ln_2.weight", "ln2w", false, func(C int) []int { return []int{C} }},
	{"ln_2.bias", "ln2b", false, func(C int) []int { return []int{C} }},
	{"mlp.c_fc.weight", "fcw", true, func(C int) []int { return []int{C, 4 * C} }},
	{"mlp.c_fc.bias", "fcb", false, func(C int) []int { return []int{4 * C} }},
	{"mlp.c_proj.weight", "fcprojw", true, func(C int) []int { return []int{4 * C, C} }},
	{"mlp.c_proj.bias", "fcprojb", false, func(C int) []int { return []int{C} }},
}

// numel is the tensor's element count for width C.
func (lt layerTensor) numel(C int) int {
	n := 1
	for _, d := range lt.shape(C) {
		n *= d
	}
	return n
}

// skipped are per-layer buffers some exports carry: the causal mask, not parameters.
var skipped = map[string]bool{"attn.bias": true, "attn.masked_bias": true}

// offsets maps each llm.c parameter name to its start in the flat buffer.
func offsets(cfg gpt2.Config) map[string]int {
	off := make(map[string]int)
	n := 0
	for _, s := range cfg.ParamSpecs() {
		off[s.Name] = n
		n += s.Numel()
	}
	return off
}

// hfConfig is the part of Hugging Face's GPT2Config that Import cross-checks.
type hfConfig struct {
	NHead      *int `json:"n_head"`
	NEmbd      *int `json:"n_embd"`
	NLayer     *int `json:"n_layer"`
	NPositions *int `json:"n_positions"`
	VocabSize  *int `json:"vocab_size"`
}

// numHeads decides the head count: config.json beside the file, else opts, else the table.
func numHeads(path string, cfg gpt2.Config, opts ImportOptions) (int, error) {
	if opts.NumHeads < 0 {
		return 0, fmt.Errorf("hf: importing %s: number of heads %d must be positive", path, opts.NumHeads)
	}
	cpath := filepath.Join(filepath.Dir(path), "config.json")
	b, err := modelfile.Read(cpath, modelfile.Config)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.NumHeads > 0 {
			return opts.NumHeads, nil
		}
		if nh, ok := headsBySize[cfg.Channels]; ok {
			return nh, nil
		}
		return 0, fmt.Errorf("hf: file %s: cannot tell the number of heads for width %d (no config.json beside it, not a GPT-2 size): give it explicitly", path, cfg.Channels)
	case err != nil:
		return 0, fmt.Errorf("hf: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(b, &hc); err != nil {
		return 0, fmt.Errorf("hf: %s: %w", cpath, err)
	}
	for _, c := range []struct {
		field string
		v     *int
		want  int
	}{{"n_embd", hc.NEmbd, cfg.Channels}, {"n_layer", hc.NLayer, cfg.NumLayers}, {"n_positions", hc.NPositions, cfg.MaxSeqLen}, {"vocab_size", hc.VocabSize, cfg.VocabSize}} {
		if c.v != nil && *c.v != c.want {
			return 0, fmt.Errorf("hf: %s: %s = %d, but the weights in %s have %d", cpath, c.field, *c.v, path, c.want)
		}
	}
	if hc.NHead == nil {
		return 0, fmt.Errorf("hf: %s: no n_head field", cpath)
	}
	if *hc.NHead <= 0 {
		return 0, fmt.Errorf("hf: %s: n_head = %d must be positive", cpath, *hc.NHead)
	}
	if opts.NumHeads > 0 && opts.NumHeads != *hc.NHead {
		return 0, fmt.Errorf("hf: %s: n_head = %d disagrees with the %d heads asked for", cpath, *hc.NHead, opts.NumHeads)
	}
	return *hc.NHead, nil
}

// ExportGPT2 writes m's weights as a Hugging Face GPT-2 model.safetensors (see Export).
func ExportGPT2(path string, m *gpt2.Model) error {
	p, err := m.ParamsToHost()
	if err != nil {
		return err
	}
	return Export(path, m.Config, p)
}

// Export writes params (llm.c order) as a Hugging Face GPT-2 model.safetensors, unprefixed
// names, Conv1D weights (in, out), the vocabulary unpadded (padded rows of wte are dropped).
// Transposed weights are produced chunk by chunk, so no second copy of the model is made.
func Export(path string, cfg gpt2.Config, params []float32) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("hf: exporting %s: %w", path, err)
	}
	if len(params) != cfg.NumParams() {
		return fmt.Errorf("hf: exporting %s: %d parameters given, config %v has %d", path, len(params), cfg, cfg.NumParams())
	}
	C, V, T := cfg.Channels, cfg.VocabSize, cfg.MaxSeqLen
	off := offsets(cfg)
	span := func(name string, start, n int) []float32 { return params[off[name]+start : off[name]+start+n] }
	tensors := []safetensors.Tensor{
		safetensors.NewF32("wte.weight", []int{V, C}, params[:V*C]),
		safetensors.NewF32("wpe.weight", []int{T, C}, span("wpe", 0, T*C)),
	}
	for l := range cfg.NumLayers {
		for _, lt := range layerTensors {
			shape, n := lt.shape(C), lt.numel(C)
			src := span(lt.param, l*n, n)
			name := fmt.Sprintf("h.%d.%s", l, lt.suffix)
			if !lt.transpose {
				tensors = append(tensors, safetensors.NewF32(name, shape, src))
				continue
			}
			// Stored (rows, cols) = (in, out); src is (cols, rows).
			rows, cols := shape[0], shape[1]
			tensors = append(tensors, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape,
				F32Fill: func(start int, dst []float32) {
					r, c := start/cols, start%cols
					for i := range dst {
						dst[i] = src[c*rows+r]
						if c++; c == cols {
							r, c = r+1, 0
						}
					}
				}})
		}
	}
	tensors = append(tensors,
		safetensors.NewF32("ln_f.weight", []int{C}, span("lnfw", 0, C)),
		safetensors.NewF32("ln_f.bias", []int{C}, span("lnfb", 0, C)))
	if err := safetensors.WriteFile(path, tensors, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	return nil
}

// WriteConfig writes a Hugging Face GPT2Config (config.json) describing cfg, so an exported
// model.safetensors loads with transformers' GPT2LMHeadModel.
func WriteConfig(path string, cfg gpt2.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("hf: writing %s: %w", path, err)
	}
	doc := map[string]any{
		"model_type":             "gpt2",
		"architectures":          []string{"GPT2LMHeadModel"},
		"activation_function":    "gelu_new",
		"layer_norm_epsilon":     1e-5,
		"n_embd":                 cfg.Channels,
		"n_head":                 cfg.NumHeads,
		"n_layer":                cfg.NumLayers,
		"n_positions":            cfg.MaxSeqLen,
		"n_ctx":                  cfg.MaxSeqLen,
		"vocab_size":             cfg.VocabSize,
		"initializer_range":      0.02,
		"scale_attn_weights":     true,
		"tie_word_embeddings":    true,
		"attn_pdrop":             0.1,
		"embd_pdrop":             0.1,
		"resid_pdrop":            0.1,
		"summary_type":           "cls_index",
		"summary_use_proj":       true,
		"summary_proj_to_labels": true,
		"summary_first_dropout":  0.1,
	}
	if cfg.VocabSize == gpt2.GPT2Vocab {
		doc["bos_token_id"] = gpt2.GPT2Vocab - 1
		doc["eos_token_id"] = gpt2.GPT2Vocab - 1
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("hf: writing %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	return nil
}
