package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

const (
	// Format names the file kind in the metadata document.
	Format = "vkgrad-checkpoint"
	// Version is the newest document version this package writes and reads: 1 holds a GPT-2,
	// 2 a Llama-family model (GPT-2 checkpoints are still written as version 1).
	Version = 2
	// MetadataKey is the "__metadata__" entry holding the JSON document.
	MetadataKey = "vkgrad"

	prefixM     = "adam_m."
	prefixV     = "adam_v."
	prefixExtra = "extra."
)

// Optimizer records the optimizer's hyper-parameters, so a resumed run can check or reuse them.
type Optimizer struct {
	Name        string             `json:"name,omitempty"` // e.g. "adamw"
	LR          float64            `json:"lr"`
	Beta1       float64            `json:"beta1"`
	Beta2       float64            `json:"beta2"`
	Eps         float64            `json:"eps"`
	WeightDecay float64            `json:"weight_decay"`
	Extra       map[string]float64 `json:"extra,omitempty"` // schedule, clipping, ...
}

// State is everything a checkpoint holds.
type State struct {
	// Config is a GPT-2's shape; unused when Llama is set.
	Config gpt2.Config
	// Llama, when set, is the shape of a Llama-family model whose parameters the state holds.
	Llama *llama.Config
	// LoRA, with Llama, says the model has low-rank adapters: Params holds the base weights
	// followed by the adapters (LoRASpecs order), and AdamM and AdamV the adapters' moments only.
	LoRA *llama.LoRAConfig
	// Step is the number of optimizer steps taken.
	Step int
	// Params is the flat parameter buffer in the model's order (ParamSpecs of Config or Llama).
	Params []float32
	// AdamM and AdamV are the optimizer moments, laid out like Params; both nil when the
	// checkpoint carries no optimizer state.
	AdamM, AdamV []float32
	Optimizer    Optimizer
	// RNG is the caller's random-generator state, stored exactly.
	RNG []uint64
	// Meta is free-form trainer state: data loader position, run config, ...
	Meta map[string]string
	// Extra holds further float32 buffers by name (a value head and its moments, say), stored
	// flat as tensors "extra.<name>"; their shapes, if needed, belong in Meta.
	Extra map[string][]float32
}

// document is the JSON stored under MetadataKey. RNG words are decimal strings because JSON
// readers outside Go often parse numbers as float64 and would lose bits of a uint64.
type document struct {
	Format    string            `json:"format"`
	Version   int               `json:"version"`
	Config    gpt2.Config       `json:"config"`
	Llama     *llama.Config     `json:"llama,omitempty"`
	LoRA      *llama.LoRAConfig `json:"lora,omitempty"`
	Step      int               `json:"step"`
	HasAdam   bool              `json:"has_adam"`
	Optimizer Optimizer         `json:"optimizer"`
	RNG       []string          `json:"rng,omitempty"`
	Meta      map[string]string `json:"meta,omitempty"`
}

// check validates a state before it is written.
func (st *State) check() error {
	if st == nil {
		return fmt.Errorf("nil state")
	}
	specs, moments, err := specsOf(st.Config, st.Llama, st.LoRA)
	if err != nil {
		return err
	}
	n := numel(specs)
	if len(st.Params) != n {
		return fmt.Errorf("the state has %d parameter values, config %s has %d parameters", len(st.Params), describe(st.Config, st.Llama), n)
	}
	if (st.AdamM == nil) != (st.AdamV == nil) {
		return fmt.Errorf("the optimizer moments AdamM and AdamV must both be set or both be nil")
	}
	if n = numel(moments); st.AdamM != nil && (len(st.AdamM) != n || len(st.AdamV) != n) {
		return fmt.Errorf("the optimizer moments have %d (AdamM) and %d (AdamV) values, want %d each for config %s", len(st.AdamM), len(st.AdamV), n, describe(st.Config, st.Llama))
	}
	if st.Step < 0 {
		return fmt.Errorf("step %d is negative", st.Step)
	}
	for name := range st.Extra {
		if name == "" {
			return fmt.Errorf("an extra buffer has an empty name")
		}
	}
	return nil
}

// paramSpec is one parameter tensor of the flat buffer.
type paramSpec struct {
	name  string
	shape []int
}

// specsOf lists the parameter tensors of a GPT-2 (cfg) or, when ll is set, a Llama-family model
// with its adapters (lo) after the base weights, in the order of the flat buffer; and the
// tensors that have optimizer moments (all of them, or the adapters).
func specsOf(cfg gpt2.Config, ll *llama.Config, lo *llama.LoRAConfig) (params, moments []paramSpec, err error) {
	if ll == nil {
		if lo != nil {
			return nil, nil, fmt.Errorf("LoRA adapters without a Llama-family model")
		}
		if err := cfg.Validate(); err != nil {
			return nil, nil, err
		}
		for _, s := range cfg.ParamSpecs() {
			params = append(params, paramSpec{s.Name, s.Shape})
		}
		return params, params, nil
	}
	if err := ll.Validate(); err != nil {
		return nil, nil, err
	}
	for _, s := range ll.ParamSpecs() {
		params = append(params, paramSpec{s.Name, s.Shape})
	}
	if lo == nil {
		return params, params, nil
	}
	if err := lo.Validate(); err != nil {
		return nil, nil, err
	}
	for _, s := range ll.LoRASpecs(*lo) {
		moments = append(moments, paramSpec{s.Name, s.Shape})
	}
	return append(params, moments...), moments, nil
}

// tensorGroup is a set of tensors stored under one name prefix (parameters, or a moment).
type tensorGroup struct {
	prefix string
	specs  []paramSpec
}

func numel(specs []paramSpec) int {
	n := 0
	for _, s := range specs {
		n += tensorNumel(s.shape)
	}
	return n
}

func tensorNumel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// encode lays the state out as safetensors tensors and metadata.
func encode(st *State) ([]safetensors.Tensor, map[string]string, error) {
	doc := document{Format: Format, Version: 1, Config: st.Config, Llama: st.Llama, LoRA: st.LoRA, Step: st.Step, HasAdam: st.AdamM != nil,
		Optimizer: st.Optimizer, Meta: st.Meta}
	if st.Llama != nil {
		doc.Version, doc.Config = 2, gpt2.Config{}
	}
	specs, moments, err := specsOf(st.Config, st.Llama, st.LoRA)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range st.RNG {
		doc.RNG = append(doc.RNG, strconv.FormatUint(r, 10))
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	var ts []safetensors.Tensor
	add := func(prefix string, specs []paramSpec, buf []float32) {
		off := 0
		for _, s := range specs {
			n := tensorNumel(s.shape)
			ts = append(ts, safetensors.NewF32(prefix+s.name, s.shape, buf[off:off+n]))
			off += n
		}
	}
	add("", specs, st.Params)
	if st.AdamM != nil {
		add(prefixM, moments, st.AdamM)
		add(prefixV, moments, st.AdamV)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Extra)) {
		ts = append(ts, safetensors.NewF32(prefixExtra+name, []int{len(st.Extra[name])}, st.Extra[name]))
	}
	return ts, map[string]string{MetadataKey: string(js)}, nil
}

// Save writes st to path atomically (see the package comment), with the permissions 0666 less
// the umask. The temporary file is atomicfile's, beside the target; only a crash of the whole
// process can leave one behind.
func Save(path string, st *State) error { return save(path, st, nil) }

// save is Save with an optional wrapper around the temporary file's writer, through which
// tests inject write failures.
func save(path string, st *State, wrap func(io.Writer) io.Writer) error {
	if err := st.check(); err != nil {
		return fmt.Errorf("checkpoint: saving %s: %w", path, err)
	}
	tensors, meta, err := encode(st)
	if err != nil {
		return fmt.Errorf("checkpoint: saving %s: %w", path, err)
	}
	err = atomicfile.Write(path, 0o666, func(w io.Writer) error {
		if wrap != nil {
			w = wrap(w)
		}
		return safetensors.Write(w, tensors, meta)
	})
	switch {
	case errors.Is(err, atomicfile.ErrDirNotSynced):
		return fmt.Errorf("checkpoint: %w", err)
	case err != nil:
		return fmt.Errorf("checkpoint: saving %s (any previous file is untouched): %w", path, err)
	}
	return nil
}

// Load reads a checkpoint written by Save.
func Load(path string) (*State, error) { return load(path, true) }

// Peek reads a checkpoint's metadata (config, step, optimizer, RNG, Meta) and checks its
// tensors without loading them: Params, AdamM, AdamV and Extra are nil.
func Peek(path string) (*State, error) { return load(path, false) }

// describe names a model's shape for errors.
func describe(cfg gpt2.Config, ll *llama.Config) string {
	if ll != nil {
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", ll.Architecture, ll.Layers, ll.Hidden, ll.Heads, ll.KVHeads, ll.Vocab)
	}
	return cfg.String()
}
