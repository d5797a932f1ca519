package rlrun

import (
	"fmt"
	"runtime/debug"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/tensor"
)

// policy returns the model to train: with --resume one of the run's shape (its parameters come
// with the trainer's Restore), else --init's (required or not; nil when not given). l is the
// checkpoint --init came from (nil for a Hugging Face directory).
func (r *Run) policy(required bool) (m nn.LM, l *load.Loaded, err error) {
	if r.Resumed == nil {
		m, l, err = r.loadInit(required)
	} else {
		m, err = load.LM(r.Be, r.Resumed.Loaded) // the trainer's Restore brings the optimizer and the rest
	}
	if err != nil || m == nil {
		return nil, nil, err
	}
	return m, l, LimitVocab(m, r.Family.Tok, r.Log)
}

func (r *Run) loadInit(required bool) (nn.LM, *load.Loaded, error) {
	if r.Init == "" {
		if required {
			return nil, nil, fmt.Errorf("--init is required: the model to fine-tune (a Hugging Face Llama/Qwen directory, a run directory of vkgrad sft, or any checkpoint)")
		}
		return nil, nil, nil
	}
	m, l, err := LoadPolicy(r.Be, r.Init)
	if err != nil {
		return nil, nil, fmt.Errorf("--init: %w", err)
	}
	if err := r.LoRA.AddAdapters(m); err != nil {
		return nil, nil, err
	}
	if m.VocabSize() < r.Family.Tok.VocabSize() {
		return nil, nil, fmt.Errorf("--init %s: vocabulary of %d is smaller than its tokenizer's %d", r.Init, m.VocabSize(), r.Family.Tok.VocabSize())
	}
	format := "Hugging Face directory"
	if l != nil {
		format = string(l.Format)
	}
	r.Log.Info().Str("format", format).Str("path", r.Init).Str("model", DescribePolicy(m)).Msg("initial model")
	return m, l, nil
}

// LoadPolicy reads the model to fine-tune from path: a Llama-family Hugging Face directory (l
// nil), or any checkpoint or run directory (GPT-2 or Llama-family, with its adapters), placed on
// be.
func LoadPolicy(be tensor.Backend, path string) (p nn.LM, l *load.Loaded, err error) {
	if ok, err := load.IsLlamaDir(path); err != nil {
		return nil, nil, err
	} else if ok {
		m, err := llama.Load(be, path)
		if err != nil {
			return nil, nil, err
		}
		return nn.Llama(m), nil, nil
	}
	if l, err = load.Read(path); err != nil {
		return nil, nil, err
	}
	if p, err = load.LM(be, l); err != nil {
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
