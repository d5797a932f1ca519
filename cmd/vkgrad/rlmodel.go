package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

func addLoRAFlags(fs *pflag.FlagSet, l *rlrun.LoRA) {
	fs.IntVar(&l.Rank, "lora-rank", l.Rank, "train LoRA adapters of this rank instead of every weight (Llama-family models; 0: full fine-tuning); the reference model is then the frozen base")
	fs.Float64Var(&l.Alpha, "lora-alpha", l.Alpha, "LoRA scale numerator: adapters add (alpha/rank)·B·A (0: twice the rank)")
	fs.StringSliceVar(&l.Targets, "lora-targets", l.Targets, "linear layers given adapters, by Hugging Face name (default: all of "+strings.Join(llama.LoRAModules, ", ")+")")
	fs.Uint64Var(&l.Seed, "lora-seed", l.Seed, "seed of the adapters' random A matrices")
}

// rlRun places the model bench rl times on its backend.
type rlRun struct{ be tensor.Backend }

func (r *rlRun) loadPolicy(path string) (rl.Policy, *load.Loaded, error) {
	return rlrun.LoadPolicy(r.be, path)
}
