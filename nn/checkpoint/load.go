package checkpoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// load reads the checkpoint at path, checking every tensor against the config before
// reading any; withTensors false stops after the checks.
func load(path string, withTensors bool) (*State, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s is not a readable vkgrad checkpoint: %w", path, err)
	}
	defer f.Close()
	r := &reader{f: f, path: path}
	doc, err := r.document()
	if err != nil {
		return nil, err
	}
	if err := r.checkLlama(doc); err != nil {
		return nil, err
	}
	specs, moments, err := specsOf(doc.Config, doc.Llama, doc.LoRA)
	if err != nil {
		return nil, r.errf("%v", err)
	}
	st, err := r.newState(doc)
	if err != nil {
		return nil, err
	}
	groups := []tensorGroup{{"", specs}}
	if doc.HasAdam {
		groups = append(groups, tensorGroup{prefixM, moments}, tensorGroup{prefixV, moments})
	}
	if err := r.checkShapes(groups, describe(doc.Config, doc.Llama)); err != nil {
		return nil, err
	}
	extras, err := r.checkNames(groups, doc.HasAdam)
	if err != nil {
		return nil, err
	}
	if !withTensors {
		return st, nil
	}
	if err := r.readTensors(st, doc.HasAdam, specs, moments, extras); err != nil {
		return nil, err
	}
	return st, nil
}

// reader is one open checkpoint file.
type reader struct {
	f    *safetensors.File
	path string
}

func (r *reader) errf(format string, a ...any) error {
	return fmt.Errorf("checkpoint: %s: "+format, append([]any{r.path}, a...)...)
}

// document decodes the metadata and checks its format, version and step.
func (r *reader) document() (document, error) {
	js, ok := r.f.Metadata()[MetadataKey]
	if !ok {
		return document{}, r.errf("not a vkgrad checkpoint (a safetensors file without %q metadata; Hugging Face models import with nn/gpt2/hf)", MetadataKey)
	}
	var doc document
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return document{}, r.errf("metadata %q: %v", MetadataKey, err)
	}
	switch {
	case doc.Format != Format:
		return document{}, r.errf("not a vkgrad checkpoint (metadata format %q, want %q)", doc.Format, Format)
	case doc.Version > Version:
		return document{}, r.errf("version %d is newer than this build reads (%d): upgrade vkgrad", doc.Version, Version)
	case doc.Version < 1:
		return document{}, r.errf("invalid version %d", doc.Version)
	case doc.Step < 0:
		return document{}, r.errf("step %d is negative", doc.Step)
	}
	if (doc.Llama != nil) != (doc.Version >= 2) {
		return document{}, r.errf("version %d with a Llama config %v: version 2 holds a Llama-family model, 1 a GPT-2", doc.Version, doc.Llama != nil)
	}
	return doc, nil
}

// checkLlama compares a Llama-family config with the file's tensors before its list of
// parameters is made, which a config of a billion layers would make without end.
func (r *reader) checkLlama(doc document) error {
	if doc.Llama == nil {
		return nil
	}
	shapes := map[string][]int{}
	for _, name := range r.f.Names() {
		t, _ := r.f.Info(name)
		shapes[name] = t.Shape
	}
	if err := doc.Llama.CheckTensors(shapes); err != nil {
		return r.errf("metadata %q: %v", MetadataKey, err)
	}
	return nil
}

// newState is the State the metadata describes, without tensors.
func (r *reader) newState(doc document) (*State, error) {
	st := &State{Config: doc.Config, Llama: doc.Llama, LoRA: doc.LoRA, Step: doc.Step, Optimizer: doc.Optimizer, Meta: doc.Meta}
	for i, s := range doc.RNG {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, r.errf("rng[%d] = %q is not a uint64", i, s)
		}
		st.RNG = append(st.RNG, v)
	}
	return st, nil
}

// checkShapes checks every tensor the config needs is present with its shape; cfg names
// the config in errors.
func (r *reader) checkShapes(groups []tensorGroup, cfg string) error {
	for _, g := range groups {
		for _, s := range g.specs {
			name := g.prefix + s.name
			t, ok := r.f.Info(name)
			if !ok {
				return r.errf("tensor %q is missing (config %s)", name, cfg)
			}
			if !slices.Equal(t.Shape, s.shape) {
				return r.errf("tensor %q has shape %v, config %s needs %v", name, t.Shape, cfg, s.shape)
			}
		}
	}
	return nil
}

// checkNames refuses tensors the config does not account for and returns the names of the
// extra (one-dimensional, prefixed) tensors.
func (r *reader) checkNames(groups []tensorGroup, hasAdam bool) ([]string, error) {
	expected := make(map[string]bool)
	for _, g := range groups {
		for _, s := range g.specs {
			expected[g.prefix+s.name] = true
		}
	}
	var extras []string
	for _, n := range r.f.Names() {
		if name, ok := strings.CutPrefix(n, prefixExtra); ok {
			if t, _ := r.f.Info(n); len(t.Shape) != 1 {
				return nil, r.errf("tensor %q has shape %v, want one dimension", n, t.Shape)
			}
			extras = append(extras, name)
			continue
		}
		if !expected[n] {
			if !hasAdam && (strings.HasPrefix(n, prefixM) || strings.HasPrefix(n, prefixV)) {
				return nil, r.errf("tensor %q present but the metadata says the checkpoint has no optimizer state", n)
			}
			return nil, r.errf("unexpected tensor %q", n)
		}
	}
	return extras, nil
}

// readTensors fills st's parameters, moments (when the file has them) and extras.
func (r *reader) readTensors(st *State, hasAdam bool, specs, moments []paramSpec, extras []string) error {
	var err error
	if st.Params, err = r.readGroup("", specs); err != nil {
		return err
	}
	if hasAdam {
		if st.AdamM, err = r.readGroup(prefixM, moments); err != nil {
			return err
		}
		if st.AdamV, err = r.readGroup(prefixV, moments); err != nil {
			return err
		}
	}
	for _, name := range extras {
		if st.Extra == nil {
			st.Extra = make(map[string][]float32, len(extras))
		}
		if st.Extra[name], err = r.f.Float32(prefixExtra + name); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	return nil
}

// readGroup reads the tensors of specs stored under prefix into one flat buffer.
func (r *reader) readGroup(prefix string, specs []paramSpec) ([]float32, error) {
	buf := make([]float32, numel(specs))
	off := 0
	for _, s := range specs {
		n := tensorNumel(s.shape)
		if err := r.f.ReadFloat32(prefix+s.name, buf[off:off+n]); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		off += n
	}
	return buf, nil
}
