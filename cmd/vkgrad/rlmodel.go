package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// modelType is the model_type of the Llama-family model a run trains over GPT-2's tokenizer:
// the resumed run's, --init's checkpoint's, or the new model's preset (presetType); "" for a
// GPT-2.
func (r *rlRun) modelType() string {
	if r.resumed != nil {
		if r.resumed.Llama != nil {
			return r.resumed.Llama.ModelType
		}
		return ""
	}
	if r.init != "" {
		if p, err := load.Resolve(r.init); err == nil {
			if st, err := checkpoint.Peek(p); err == nil && st.Llama != nil {
				return st.Llama.ModelType
			}
		}
		return ""
	}
	if r.presetType != nil {
		return r.presetType()
	}
	return ""
}

func addLoRAFlags(fs *pflag.FlagSet, l *rlrun.LoRA) {
	fs.IntVar(&l.Rank, "lora-rank", l.Rank, "train LoRA adapters of this rank instead of every weight (Llama-family models; 0: full fine-tuning); the reference model is then the frozen base")
	fs.Float64Var(&l.Alpha, "lora-alpha", l.Alpha, "LoRA scale numerator: adapters add (alpha/rank)·B·A (0: twice the rank)")
	fs.StringSliceVar(&l.Targets, "lora-targets", l.Targets, "linear layers given adapters, by Hugging Face name (default: all of "+strings.Join(llama.LoRAModules, ", ")+")")
	fs.Uint64Var(&l.Seed, "lora-seed", l.Seed, "seed of the adapters' random A matrices")
}

// loadPolicy reads the model to fine-tune from path: a Llama-family Hugging Face directory (l
// nil), or any checkpoint or run directory (GPT-2 or Llama-family, with its adapters), placed on
// the run's backend.
func (r *rlRun) loadPolicy(path string) (p rl.Policy, l *load.Loaded, err error) {
	if ok, err := load.IsLlamaDir(path); err != nil {
		return nil, nil, err
	} else if ok {
		m, err := llama.Load(r.be, path)
		if err != nil {
			return nil, nil, err
		}
		return nn.Llama(m), nil, nil
	}
	if l, err = load.Read(path); err != nil {
		return nil, nil, err
	}
	if p, err = r.policyOf(l); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	dropHostWeights(l)
	return p, l, nil
}

// dropHostWeights lets go of the host copies of the weights and AdamW moments once the policy
// holds its own (the fine-tuning starts its optimizer afresh): GPT-2 124M's would be 1.4 GB
// beside the model, its reference and its gradients. The rest of the checkpoint (a value
// head, the metadata) stays.
func dropHostWeights(l *load.Loaded) {
	l.Params = nil
	if st := l.State; st != nil {
		st.Params, st.AdamM, st.AdamV = nil, nil, nil
	}
	debug.FreeOSMemory()
}

// policyOf places a checkpoint's model, adapters included, on the run's backend.
func (r *rlRun) policyOf(l *load.Loaded) (rl.Policy, error) {
	if l.Llama != nil {
		m, err := load.Llama(r.be, l)
		if err != nil {
			return nil, err
		}
		return nn.Llama(m), nil
	}
	m, err := gpt2.New(r.be, l.Config)
	if err != nil {
		return nil, err
	}
	return nn.GPT2(m), m.SetParams(l.Params)
}
