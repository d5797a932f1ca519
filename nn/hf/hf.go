// Package hf moves GPT-2 weights between Hugging Face's model.safetensors layout and vkgrad's
// flat llm.c-order parameter buffer.
//
// Hugging Face's GPT-2 uses Conv1D layers whose weights are stored (in, out); llm.c stores
// linear weights (out, in), so c_attn, c_proj, c_fc and mlp.c_proj are transposed on the way
// in and out. The vocabulary is padded to a multiple of 128 with zero rows (gpt2.PadVocab).
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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

// Import reads a Hugging Face GPT-2 model.safetensors (names optionally prefixed with
// "transformer.") and returns its config and parameters in llm.c order. The config comes from
// the tensor shapes: C and V from wte, maxT from wpe, L from the highest h.N; see ImportOptions
// for the head count. path may also be a directory holding model.safetensors.
func Import(path string, opts ImportOptions) (gpt2.Config, []float32, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "model.safetensors")
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return gpt2.Config{}, nil, fmt.Errorf("hf: %w", err)
	}
	defer f.Close()
	errf := func(format string, a ...any) error {
		return fmt.Errorf("hf: file %s: "+format, append([]any{path}, a...)...)
	}

	// Map each canonical (unprefixed) name to its name in the file.
	names := make(map[string]string)
	layers := -1
	for _, n := range f.Names() {
		c := strings.TrimPrefix(n, "transformer.")
		if prev, dup := names[c]; dup {
			return gpt2.Config{}, nil, errf("tensors %q and %q are the same parameter", prev, n)
		}
		names[c] = n
		if rest, ok := strings.CutPrefix(c, "h."); ok {
			idx, suffix, _ := strings.Cut(rest, ".")
			i, err := strconv.Atoi(idx)
			if err != nil || i < 0 || strconv.Itoa(i) != idx {
				return gpt2.Config{}, nil, errf("tensor %q: %q is not a layer index", n, idx)
			}
			if !skipped[suffix] && !slices.ContainsFunc(layerTensors, func(lt layerTensor) bool { return lt.suffix == suffix }) {
				return gpt2.Config{}, nil, errf("unexpected tensor %q (not part of GPT-2)", n)
			}
			layers = max(layers, i)
			continue
		}
		switch c {
		case "wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias", "lm_head.weight":
		default:
			return gpt2.Config{}, nil, errf("unexpected tensor %q (not part of GPT-2)", n)
		}
	}
	info := func(c string) (safetensors.TensorInfo, error) {
		n, ok := names[c]
		if !ok {
			return safetensors.TensorInfo{}, errf("missing tensor %q", c)
		}
		t, _ := f.Info(n)
		return t, nil
	}
	wte, err := info("wte.weight")
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	if len(wte.Shape) != 2 || wte.Shape[0] <= 0 || wte.Shape[1] <= 0 {
		return gpt2.Config{}, nil, errf("tensor %q has shape %v, want (vocab_size, channels)", wte.Name, wte.Shape)
	}
	V, C := wte.Shape[0], wte.Shape[1]
	wpe, err := info("wpe.weight")
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	if len(wpe.Shape) != 2 || wpe.Shape[0] <= 0 || wpe.Shape[1] != C {
		return gpt2.Config{}, nil, errf("tensor %q has shape %v, want (max_seq_len, %d) to match %q", wpe.Name, wpe.Shape, C, wte.Name)
	}
	if layers < 0 {
		return gpt2.Config{}, nil, errf("no transformer layers (no h.N.* tensors)")
	}
	cfg := gpt2.Config{MaxSeqLen: wpe.Shape[0], VocabSize: V, PaddedVocabSize: gpt2.PadVocab(V), NumLayers: layers + 1, Channels: C}
	// Check every layer is complete before allocating for the layer count a name implied.
	for l := range cfg.NumLayers {
		for _, lt := range layerTensors {
			if _, err := info(fmt.Sprintf("h.%d.%s", l, lt.suffix)); err != nil {
				return gpt2.Config{}, nil, err
			}
		}
	}
	for _, c := range []string{"ln_f.weight", "ln_f.bias"} {
		if _, err := info(c); err != nil {
			return gpt2.Config{}, nil, err
		}
	}
	cfg.NumHeads, err = numHeads(path, cfg, opts)
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return gpt2.Config{}, nil, errf("inferred %w", err)
	}

	params := make([]float32, cfg.NumParams())
	off := offsets(cfg)
	// read loads tensor c, checks its shape and stores it at dst, transposing a (rows, cols)
	// Conv1D weight into (cols, rows).
	var scratch []float32
	read := func(c string, shape []int, dst []float32, transpose bool) error {
		t, err := info(c)
		if err != nil {
			return err
		}
		if !slices.Equal(t.Shape, shape) {
			return errf("tensor %q has shape %v, want %v for %v", t.Name, t.Shape, shape, cfg)
		}
		if !transpose {
			err = f.ReadFloat32(t.Name, dst)
		} else {
			scratch = slices.Grow(scratch[:0], len(dst))[:len(dst)]
			if err = f.ReadFloat32(t.Name, scratch); err == nil {
				rows, cols := shape[0], shape[1]
				for r := range rows {
					for k, v := range scratch[r*cols : (r+1)*cols] {
						dst[k*rows+r] = v
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("hf: %w", err)
		}
		return nil
	}
	if err := read("wte.weight", []int{V, C}, params[:V*C], false); err != nil {
		return gpt2.Config{}, nil, err
	}
	T := cfg.MaxSeqLen
	if err := read("wpe.weight", []int{T, C}, params[off["wpe"]:off["wpe"]+T*C], false); err != nil {
		return gpt2.Config{}, nil, err
	}
	for l := range cfg.NumLayers {
		for _, lt := range layerTensors {
			shape := lt.shape(C)
			n := shape[0]
			if len(shape) == 2 {
				n *= shape[1]
			}
			start := off[lt.param] + l*n
			if err := read(fmt.Sprintf("h.%d.%s", l, lt.suffix), shape, params[start:start+n], lt.transpose); err != nil {
				return gpt2.Config{}, nil, err
			}
		}
	}
	if err := read("ln_f.weight", []int{C}, params[off["lnfw"]:off["lnfw"]+C], false); err != nil {
		return gpt2.Config{}, nil, err
	}
	if err := read("ln_f.bias", []int{C}, params[off["lnfb"]:off["lnfb"]+C], false); err != nil {
		return gpt2.Config{}, nil, err
	}
	// GPT-2 ties the lm head to wte; an untied head would be silently dropped, so refuse it.
	if _, ok := names["lm_head.weight"]; ok {
		head := make([]float32, V*C)
		if err := read("lm_head.weight", []int{V, C}, head, false); err != nil {
			return gpt2.Config{}, nil, err
		}
		if !slices.Equal(head, params[:V*C]) {
			return gpt2.Config{}, nil, errf("tensor %q differs from %q: vkgrad's GPT-2 ties them", names["lm_head.weight"], wte.Name)
		}
	}
	return cfg, params, nil
}

// numHeads decides the head count: config.json beside the file, else opts, else the table.
func numHeads(path string, cfg gpt2.Config, opts ImportOptions) (int, error) {
	if opts.NumHeads < 0 {
		return 0, fmt.Errorf("hf: importing %s: number of heads %d must be positive", path, opts.NumHeads)
	}
	cpath := filepath.Join(filepath.Dir(path), "config.json")
	b, err := os.ReadFile(cpath)
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
			shape := lt.shape(C)
			n := shape[0]
			if len(shape) == 2 {
				n *= shape[1]
			}
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
