package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
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

// lm is the model as nn/train drives it.
func (m trainModel) lm() nn.LM {
	if m.llama != nil {
		return nn.Llama(m.llama)
	}
	return nn.GPT2(m.gpt2)
}

func (m trainModel) newTrainer(cfg train.Config, tokens []int32, source string) (*train.Trainer, error) {
	return train.New(m.lm(), cfg, tokens, source)
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

// initModel reads --init: a Llama-family Hugging Face directory, or a checkpoint or run
// directory, whose state says the family. The run takes its name from it.
func (f *trainFlags) initModel(be tensor.Backend, log zerolog.Logger) (trainModel, error) {
	hfDir, err := load.IsLlamaDir(f.init)
	if err != nil {
		return trainModel{}, fmt.Errorf("--init: %w", err)
	}
	if hfDir {
		m, err := llama.Load(be, f.init)
		if err != nil {
			return trainModel{}, fmt.Errorf("--init: %w", err)
		}
		f.preset = filepath.Base(f.init)
		log.Info().Str("format", "Hugging Face directory").Str("path", f.init).Msg("initial model")
		return f.llamaOf(be, m, f.init, log)
	}
	l, err := load.Read(f.init)
	if err != nil {
		return trainModel{}, fmt.Errorf("--init: %w", err)
	}
	if l.Llama == nil {
		return f.initGPT2(be, l, log)
	}
	m, err := load.Llama(be, l)
	if err != nil {
		return trainModel{}, fmt.Errorf("--init %s: %w", l.Path, err)
	}
	f.preset = strings.TrimSuffix(filepath.Base(l.Path), filepath.Ext(l.Path))
	log.Info().Str("format", string(l.Format)).Str("path", l.Path).Msg("initial model")
	return f.llamaOf(be, m, load.HFDirOfRun(f.init), log)
}

// llamaOf pairs a Llama-family model with hfDir's tokenizer and checks that the run fits.
func (f *trainFlags) llamaOf(be tensor.Backend, m *llama.Model, hfDir string, log zerolog.Logger) (trainModel, error) {
	tm, err := llamaTrainModel(m, hfDir)
	if err != nil {
		return tm, err
	}
	return tm, f.memory().CheckLlama(be, m, log)
}

// presetModel is a new random model of --preset's shape, of the family that names it.
func (f *trainFlags) presetModel(be tensor.Backend, log zerolog.Logger) (trainModel, error) {
	cfg, gpt2Err := gpt2.Preset(f.preset)
	if gpt2Err == nil {
		return f.newGPT2(be, cfg, log)
	}
	lc, err := llama.Preset(f.preset)
	if err != nil {
		return trainModel{}, fmt.Errorf("--preset: %w (or a Llama-family shape: %s)", gpt2Err, strings.Join(llama.PresetNames(), ", "))
	}
	if lc.Vocab > gpt2.GPT2Vocab { // a new model reads GPT-2 tokens: no rows past them
		log.Info().Int("preset_vocab", lc.Vocab).Int("vocab", gpt2.GPT2Vocab).Msg("the new model's vocabulary and EOS are GPT-2's")
		lc.Vocab, lc.BOS, lc.EOS = gpt2.GPT2Vocab, nil, []int{gpt2.GPT2Vocab - 1}
	}
	m, err := llama.New(be, lc)
	if err != nil {
		return trainModel{}, err
	}
	if err := m.InitRandom(f.cfg.Seed); err != nil {
		return trainModel{}, err
	}
	return f.llamaOf(be, m, "", log)
}
