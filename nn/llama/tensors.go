package llama

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

const (
	embedName   = "model.embed_tokens.weight"
	layerPrefix = "model.layers."
)

// CheckTensors compares the config with the shapes of the tensors a model file holds, by name,
// before anything the config sizes is made: the list of a billion layers' parameters that a
// config.json can claim over a file of two would exhaust memory long before a tensor is found
// missing. It checks the sizes the tensors show (hidden_size and vocab_size against the token
// embedding, num_hidden_layers against the layers present, the head and MLP widths against
// layer 0's projections), naming the field and the tensor; LoadWeights then checks every shape.
func (c Config) CheckTensors(shapes map[string][]int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	emb, ok := shapes[embedName]
	switch {
	case !ok:
		return fmt.Errorf("the weights have no %s", embedName)
	case len(emb) != 2:
		return fmt.Errorf("tensor %s has shape %v, want [vocab_size, hidden_size]", embedName, emb)
	case emb[1] != c.Hidden:
		return fmt.Errorf("hidden_size is %d, but tensor %s has shape %v", c.Hidden, embedName, emb)
	case emb[0] != c.Vocab:
		return fmt.Errorf("vocab_size is %d, but tensor %s has shape %v", c.Vocab, embedName, emb)
	}
	if err := c.checkLayers(shapes); err != nil {
		return err
	}
	p := layerPrefix + "0."
	for _, d := range []struct {
		tensor, field string
		rows, per     int
	}{
		{"self_attn.q_proj.weight", "num_attention_heads", c.Heads, c.HeadDim},
		{"self_attn.k_proj.weight", "num_key_value_heads", c.KVHeads, c.HeadDim},
		{"mlp.gate_proj.weight", "intermediate_size", c.Intermediate, 1},
	} {
		s, ok := shapes[p+d.tensor]
		if !ok || len(s) == 0 {
			continue // a missing or malformed tensor is reported by LoadWeights' full check
		}
		if s[0]%d.per != 0 || s[0]/d.per != d.rows {
			if d.per == 1 {
				return fmt.Errorf("%s is %d, but tensor %s has shape %v", d.field, d.rows, p+d.tensor, s)
			}
			return fmt.Errorf("%s %d × head_dim %d does not match tensor %s of shape %v", d.field, d.rows, d.per, p+d.tensor, s)
		}
	}
	return nil
}

// checkLayers checks num_hidden_layers against the layers the tensors are of: every index from
// 0 to num_hidden_layers-1 present, and no other.
func (c Config) checkLayers(shapes map[string][]int) error {
	present := map[int]string{} // layer index -> one of its tensors
	for name := range shapes {
		rest, ok := strings.CutPrefix(name, layerPrefix)
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, ".")
		l, err := strconv.Atoi(idx)
		if err != nil || l < 0 || strconv.Itoa(l) != idx {
			return fmt.Errorf("tensor %s: %q is not a layer index", name, idx)
		}
		if prev, ok := present[l]; !ok || name < prev {
			present[l] = name
		}
	}
	if len(present) == 0 {
		return fmt.Errorf("num_hidden_layers is %d, but the weights have no %sN tensors", c.Layers, layerPrefix)
	}
	idx := make([]int, 0, len(present))
	for l := range present {
		idx = append(idx, l)
	}
	slices.Sort(idx)
	last := idx[len(idx)-1]
	switch {
	case last >= c.Layers:
		return fmt.Errorf("num_hidden_layers is %d, but the weights have tensor %s", c.Layers, present[last])
	case len(idx) < c.Layers:
		missing := 0
		for missing < len(idx) && idx[missing] == missing {
			missing++
		}
		return fmt.Errorf("num_hidden_layers is %d, but the weights hold %d layers (no tensor %s%d.*)", c.Layers, len(idx), layerPrefix, missing)
	}
	return nil
}
