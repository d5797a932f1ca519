package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// trainModel is the model `vkgrad train` trains: a GPT-2, or a Llama-family model with the
// tokenizer its text needs (its Hugging Face directory's, or GPT-2's for a preset's shape).
type trainModel struct {
	gpt2  *gpt2.Model
	llama *llama.Model
	hfDir string           // the Llama-family model's Hugging Face directory, "" for GPT-2's tokenizer
	tok   data.LoadOptions // the corpus tokenizer: GPT-2's when it names none
}

func (m trainModel) describe() string {
	if m.llama != nil {
		c := m.llama.Config
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", c.Architecture, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
	}
	return m.gpt2.Config.String()
}

func (m trainModel) numParams() int {
	if m.llama != nil {
		return m.llama.Config.NumParams()
	}
	return m.gpt2.Config.NumParams()
}

func (m trainModel) newTrainer(cfg train.Config, tokens []int32, source string) (*train.Trainer, error) {
	if m.llama != nil {
		return train.NewLlama(m.llama, cfg, tokens, source)
	}
	return train.New(m.gpt2, cfg, tokens, source)
}

// llamaTrainModel pairs a Llama-family model with its tokenizer (hfDir's, or GPT-2's).
func llamaTrainModel(m *llama.Model, hfDir string) (trainModel, error) {
	tm := trainModel{llama: m, hfDir: hfDir}
	if hfDir == "" {
		return tm, nil
	}
	e, err := llamaEvalModel(m, hfDir, hfDir, nil)
	if err != nil {
		return tm, err
	}
	tm.tok = e.tok
	return tm, nil
}

// llamaModel reads a Llama-family --init (a Hugging Face directory, or a checkpoint of one),
// or makes a random model of a Llama-family --preset; ok is false for anything else.
func (f *trainFlags) llamaModel(be tensor.Backend, log zerolog.Logger) (tm trainModel, ok bool, err error) {
	hfDir, err := isHFModelDir(f.init)
	switch {
	case err != nil:
		return tm, true, fmt.Errorf("--init: %w", err)
	case f.init != "" && hfDir:
		m, err := llama.Load(be, f.init)
		if err != nil {
			return tm, true, fmt.Errorf("--init: %w", err)
		}
		f.preset = filepath.Base(f.init)
		log.Info().Str("format", "Hugging Face directory").Str("path", f.init).Msg("initial model")
		tm, err = llamaTrainModel(m, f.init)
		return tm, true, err
	case f.init != "":
		l, err := load.Read(f.init)
		if err != nil || l.Llama == nil {
			return tm, false, nil // a GPT-2, or an error the GPT-2 path reports
		}
		m, err := newLlamaOfState(be, l)
		if err != nil {
			return tm, true, fmt.Errorf("--init %s: %w", l.Path, err)
		}
		f.preset = strings.TrimSuffix(filepath.Base(l.Path), filepath.Ext(l.Path))
		log.Info().Str("format", string(l.Format)).Str("path", l.Path).Msg("initial model")
		tm, err = llamaTrainModel(m, hfDirOfRun(f.init))
		return tm, true, err
	}
	cfg, err := llama.Preset(f.preset)
	if err != nil {
		return tm, false, nil
	}
	if cfg.Vocab > gpt2.GPT2Vocab { // a new model reads GPT-2 tokens: no rows past them
		log.Info().Int("preset_vocab", cfg.Vocab).Int("vocab", gpt2.GPT2Vocab).Msg("the new model's vocabulary and EOS are GPT-2's")
		cfg.Vocab, cfg.BOS, cfg.EOS = gpt2.GPT2Vocab, nil, []int{gpt2.GPT2Vocab - 1}
	}
	m, err := llama.New(be, cfg)
	if err != nil {
		return tm, true, err
	}
	if err := m.InitRandom(f.cfg.Seed); err != nil {
		return tm, true, err
	}
	return trainModel{llama: m}, true, nil
}

// newLlamaOfState makes a Llama-family model of a checkpoint's shape and adapters, with its
// values.
func newLlamaOfState(be tensor.Backend, l *load.Loaded) (*llama.Model, error) {
	m, err := llama.New(be, *l.Llama)
	if err != nil {
		return nil, err
	}
	if l.State != nil && l.State.LoRA != nil {
		if err := m.EnableLoRA(*l.State.LoRA, 0); err != nil {
			return nil, err
		}
	}
	return m, rl.SetParams(rl.Llama(m), l.Params)
}
