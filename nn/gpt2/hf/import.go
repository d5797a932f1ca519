package hf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// Import reads a Hugging Face GPT-2 model.safetensors (names optionally prefixed with
// "transformer.") and returns its config and parameters in llm.c order. The config comes from
// the tensor shapes: C and V from wte, maxT from wpe, L from the highest h.N; see ImportOptions
// for the head count. path may also be a directory holding model.safetensors.
func Import(path string, opts ImportOptions) (gpt2.Config, []float32, error) {
	path = modelFile(path)
	f, err := safetensors.Open(path)
	if err != nil {
		return gpt2.Config{}, nil, fmt.Errorf("hf: %w", err)
	}
	defer f.Close()
	im := &importer{f: f, path: path}
	if err := im.indexNames(); err != nil {
		return gpt2.Config{}, nil, err
	}
	cfg, err := im.inferConfig(opts)
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	params, err := im.readParams(cfg)
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	if err := im.checkTiedHead(cfg, params); err != nil {
		return gpt2.Config{}, nil, err
	}
	return cfg, params, nil
}

// modelFile resolves a model directory to the model.safetensors inside it.
func modelFile(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(path, "model.safetensors")
	}
	return path
}

// importer is the state of one Import: the open file, its tensors by canonical name and a
// scratch buffer reused for transposes.
type importer struct {
	f       *safetensors.File
	path    string
	names   map[string]string // canonical (unprefixed) name → name in the file
	layers  int               // highest layer index seen, -1 for none
	scratch []float32
}

func (im *importer) errf(format string, a ...any) error {
	return fmt.Errorf("hf: file %s: "+format, append([]any{im.path}, a...)...)
}

// indexNames maps each canonical name to its name in the file, refusing duplicates and
// tensors that are not part of GPT-2, and records the highest layer index.
func (im *importer) indexNames() error {
	im.names = make(map[string]string)
	im.layers = -1
	for _, n := range im.f.Names() {
		c := strings.TrimPrefix(n, "transformer.")
		if prev, dup := im.names[c]; dup {
			return im.errf("tensors %q and %q are the same parameter", prev, n)
		}
		im.names[c] = n
		if rest, ok := strings.CutPrefix(c, "h."); ok {
			i, err := im.layerIndex(n, rest)
			if err != nil {
				return err
			}
			im.layers = max(im.layers, i)
			continue
		}
		switch c {
		case "wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias", "lm_head.weight":
		default:
			return im.errf("unexpected tensor %q (not part of GPT-2)", n)
		}
	}
	return nil
}

// layerIndex parses "{i}.{suffix}" of the per-layer tensor n and checks the suffix is one
// GPT-2 has.
func (im *importer) layerIndex(n, rest string) (int, error) {
	idx, suffix, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || strconv.Itoa(i) != idx {
		return 0, im.errf("tensor %q: %q is not a layer index", n, idx)
	}
	if !skipped[suffix] && !slices.ContainsFunc(layerTensors, func(lt layerTensor) bool { return lt.suffix == suffix }) {
		return 0, im.errf("unexpected tensor %q (not part of GPT-2)", n)
	}
	return i, nil
}

// info returns the tensor with canonical name c.
func (im *importer) info(c string) (safetensors.TensorInfo, error) {
	n, ok := im.names[c]
	if !ok {
		return safetensors.TensorInfo{}, im.errf("missing tensor %q", c)
	}
	t, _ := im.f.Info(n)
	return t, nil
}

// inferConfig derives the config from the tensor shapes and the head count, checking every
// tensor is present before anything is allocated for the sizes the names imply.
func (im *importer) inferConfig(opts ImportOptions) (gpt2.Config, error) {
	cfg, err := im.shapeConfig()
	if err != nil {
		return gpt2.Config{}, err
	}
	if err := im.checkComplete(cfg); err != nil {
		return gpt2.Config{}, err
	}
	cfg.NumHeads, err = numHeads(im.path, cfg, opts)
	if err != nil {
		return gpt2.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return gpt2.Config{}, im.errf("inferred %w", err)
	}
	return cfg, nil
}

// shapeConfig reads V and C from wte, the context length from wpe and the layer count from
// the names.
func (im *importer) shapeConfig() (gpt2.Config, error) {
	wte, err := im.info("wte.weight")
	if err != nil {
		return gpt2.Config{}, err
	}
	if len(wte.Shape) != 2 || wte.Shape[0] <= 0 || wte.Shape[1] <= 0 {
		return gpt2.Config{}, im.errf("tensor %q has shape %v, want (vocab_size, channels)", wte.Name, wte.Shape)
	}
	V, C := wte.Shape[0], wte.Shape[1]
	wpe, err := im.info("wpe.weight")
	if err != nil {
		return gpt2.Config{}, err
	}
	if len(wpe.Shape) != 2 || wpe.Shape[0] <= 0 || wpe.Shape[1] != C {
		return gpt2.Config{}, im.errf("tensor %q has shape %v, want (max_seq_len, %d) to match %q", wpe.Name, wpe.Shape, C, wte.Name)
	}
	if im.layers < 0 {
		return gpt2.Config{}, im.errf("no transformer layers (no h.N.* tensors)")
	}
	return gpt2.Config{MaxSeqLen: wpe.Shape[0], VocabSize: V, PaddedVocabSize: gpt2.PadVocab(V), NumLayers: im.layers + 1, Channels: C}, nil
}

// checkComplete checks every layer has all its tensors and the final layernorm is there.
func (im *importer) checkComplete(cfg gpt2.Config) error {
	for l := range cfg.NumLayers {
		for _, lt := range layerTensors {
			if _, err := im.info(fmt.Sprintf("h.%d.%s", l, lt.suffix)); err != nil {
				return err
			}
		}
	}
	for _, c := range []string{"ln_f.weight", "ln_f.bias"} {
		if _, err := im.info(c); err != nil {
			return err
		}
	}
	return nil
}

// readParams reads every tensor into its place in a new llm.c-order parameter buffer.
func (im *importer) readParams(cfg gpt2.Config) ([]float32, error) {
	params := make([]float32, cfg.NumParams())
	off := offsets(cfg)
	V, C, T := cfg.VocabSize, cfg.Channels, cfg.MaxSeqLen
	span := func(name string, start, n int) []float32 { return params[off[name]+start : off[name]+start+n] }
	if err := im.read(cfg, "wte.weight", []int{V, C}, params[:V*C], false); err != nil {
		return nil, err
	}
	if err := im.read(cfg, "wpe.weight", []int{T, C}, span("wpe", 0, T*C), false); err != nil {
		return nil, err
	}
	for l := range cfg.NumLayers {
		for _, lt := range layerTensors {
			n := lt.numel(C)
			if err := im.read(cfg, fmt.Sprintf("h.%d.%s", l, lt.suffix), lt.shape(C), span(lt.param, l*n, n), lt.transpose); err != nil {
				return nil, err
			}
		}
	}
	if err := im.read(cfg, "ln_f.weight", []int{C}, span("lnfw", 0, C), false); err != nil {
		return nil, err
	}
	if err := im.read(cfg, "ln_f.bias", []int{C}, span("lnfb", 0, C), false); err != nil {
		return nil, err
	}
	return params, nil
}

// read loads tensor c, checks its shape and stores it at dst, transposing a (rows, cols)
// Conv1D weight into (cols, rows).
func (im *importer) read(cfg gpt2.Config, c string, shape []int, dst []float32, transpose bool) error {
	t, err := im.info(c)
	if err != nil {
		return err
	}
	if !slices.Equal(t.Shape, shape) {
		return im.errf("tensor %q has shape %v, want %v for %v", t.Name, t.Shape, shape, cfg)
	}
	if transpose {
		err = im.readTransposed(t.Name, shape[0], shape[1], dst)
	} else {
		err = im.f.ReadFloat32(t.Name, dst)
	}
	if err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	return nil
}

// readTransposed reads the (rows, cols) tensor name into dst as (cols, rows).
func (im *importer) readTransposed(name string, rows, cols int, dst []float32) error {
	im.scratch = slices.Grow(im.scratch[:0], len(dst))[:len(dst)]
	if err := im.f.ReadFloat32(name, im.scratch); err != nil {
		return err
	}
	for r := range rows {
		for k, v := range im.scratch[r*cols : (r+1)*cols] {
			dst[k*rows+r] = v
		}
	}
	return nil
}

// checkTiedHead refuses an lm_head that differs from wte: GPT-2 ties them, and an untied head
// would be silently dropped.
func (im *importer) checkTiedHead(cfg gpt2.Config, params []float32) error {
	name, ok := im.names["lm_head.weight"]
	if !ok {
		return nil
	}
	V, C := cfg.VocabSize, cfg.Channels
	head := make([]float32, V*C)
	if err := im.read(cfg, "lm_head.weight", []int{V, C}, head, false); err != nil {
		return err
	}
	if !slices.Equal(head, params[:V*C]) {
		return im.errf("tensor %q differs from %q: vkgrad's GPT-2 ties them", name, im.names["wte.weight"])
	}
	return nil
}
