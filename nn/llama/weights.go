package llama

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// Tensor is one weight, upcast to float32, row-major.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Shapes returns every parameter a model of this config has, by its Hugging Face name, with
// its shape. Linear weights are [out_features, in_features].
func (c Config) Shapes() map[string][]int {
	C, D, I, V := c.Hidden, c.HeadDim, c.Intermediate, c.Vocab
	q, kv := c.Heads*D, c.KVHeads*D
	out := map[string][]int{"model.embed_tokens.weight": {V, C}, "model.norm.weight": {C}}
	if !c.TieEmbeddings {
		out["lm_head.weight"] = []int{V, C}
	}
	for l := range c.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		out[p+"input_layernorm.weight"] = []int{C}
		out[p+"post_attention_layernorm.weight"] = []int{C}
		out[p+"self_attn.q_proj.weight"] = []int{q, C}
		out[p+"self_attn.k_proj.weight"] = []int{kv, C}
		out[p+"self_attn.v_proj.weight"] = []int{kv, C}
		out[p+"self_attn.o_proj.weight"] = []int{C, q}
		if c.AttentionBias {
			out[p+"self_attn.q_proj.bias"] = []int{q}
			out[p+"self_attn.k_proj.bias"] = []int{kv}
			out[p+"self_attn.v_proj.bias"] = []int{kv}
		}
		if c.QKNorm {
			out[p+"self_attn.q_norm.weight"] = []int{D}
			out[p+"self_attn.k_norm.weight"] = []int{D}
		}
		out[p+"mlp.gate_proj.weight"] = []int{I, C}
		out[p+"mlp.up_proj.weight"] = []int{I, C}
		out[p+"mlp.down_proj.weight"] = []int{C, I}
	}
	return out
}

// LoadWeights reads every parameter of cfg from dir's model.safetensors, or from the shards
// listed by model.safetensors.index.json, upcasting BF16 and F16 to float32. A missing
// tensor, a wrong shape or a tensor the model does not use is an error naming it and its file.
// The files' headers are checked against the config (CheckTensors) before any tensor is read.
func LoadWeights(dir string, cfg Config) (map[string]Tensor, error) {
	files, err := weightFiles(dir)
	if err != nil {
		return nil, err
	}
	shards, err := openShards(files)
	defer func() {
		for _, sf := range shards {
			sf.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckTensors(headerShapes(shards)); err != nil {
		return nil, fmt.Errorf("llama: %s: %w", filepath.Join(dir, "config.json"), err)
	}
	want := cfg.Shapes()
	out := make(map[string]Tensor, len(want))
	for _, sf := range shards {
		if err := readShard(sf, want, out); err != nil {
			return nil, err
		}
	}
	var missing []string
	for name := range want {
		if _, ok := out[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("llama: %s lacks %d tensors of a %s model: %s", dir, len(missing), cfg.ModelType, strings.Join(first(missing, 5), ", "))
	}
	return out, nil
}

func first(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], fmt.Sprintf("... (%d more)", len(xs)-n))
}

// openShards opens the safetensors files, reading their headers; the files opened are returned
// (to be closed) even with an error.
func openShards(files []string) ([]*safetensors.File, error) {
	var shards []*safetensors.File
	for _, path := range files {
		sf, err := safetensors.Open(path)
		if err != nil {
			return shards, fmt.Errorf("llama: %w", err)
		}
		shards = append(shards, sf)
	}
	return shards, nil
}

// headerShapes maps the tensors of the files to their shapes.
func headerShapes(shards []*safetensors.File) map[string][]int {
	shapes := map[string][]int{}
	for _, sf := range shards {
		for _, name := range sf.Names() {
			info, _ := sf.Info(name)
			shapes[name] = info.Shape
		}
	}
	return shapes
}

// readShard reads the tensors of one safetensors file into out.
func readShard(sf *safetensors.File, want map[string][]int, out map[string]Tensor) error {
	path := sf.Path()
	for _, name := range sf.Names() {
		info, _ := sf.Info(name)
		shape, ok := want[name]
		if !ok {
			if strings.HasSuffix(name, "rotary_emb.inv_freq") {
				continue // a buffer some exports include; recomputed from the config
			}
			return fmt.Errorf("llama: %s: tensor %q is not a parameter of this model (is config.json right?)", path, name)
		}
		got := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			got[i] = int(d)
		}
		if !slices.Equal(got, shape) {
			return fmt.Errorf("llama: %s: tensor %q has shape %v, config.json implies %v", path, name, got, shape)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("llama: %s: tensor %q appears in more than one file", path, name)
		}
		data, err := sf.Float32(name)
		if err != nil {
			return fmt.Errorf("llama: %w", err)
		}
		out[name] = Tensor{Shape: got, Data: data}
	}
	return nil
}

// weightFiles lists the safetensors files of a model directory.
func weightFiles(dir string) ([]string, error) {
	index := filepath.Join(dir, "model.safetensors.index.json")
	b, err := modelfile.Read(index, modelfile.Index)
	if errors.Is(err, os.ErrNotExist) {
		single := filepath.Join(dir, "model.safetensors")
		if _, err := os.Stat(single); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("llama: %s has neither model.safetensors nor model.safetensors.index.json", dir)
		} else if err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
		return []string{single}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("llama: %s: %w", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("llama: %s: empty weight_map", index)
	}
	seen := map[string]bool{}
	var files []string
	for name, f := range idx.WeightMap {
		if f != filepath.Base(f) {
			return nil, fmt.Errorf("llama: %s: tensor %q maps to %q, which is not a file in the directory", index, name, f)
		}
		if !seen[f] {
			seen[f] = true
			files = append(files, filepath.Join(dir, f))
		}
	}
	sort.Strings(files)
	return files, nil
}
