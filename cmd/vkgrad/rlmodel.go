package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/tokenizer"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// rlTokenizer is what the fine-tuning commands encode prompts and decode completions with.
type rlTokenizer interface {
	rl.Tokenizer
	VocabSize() int
}

// modelFamily is what a run's model brings beside its weights: the tokenizer, the
// end-of-sequence id and, for chat models, the chat template datasets' messages are rendered in.
type modelFamily struct {
	// hfDir is the Hugging Face directory of a Llama-family model ("" for GPT-2): its
	// tokenizer.json, tokenizer_config.json and generation_config.json.
	hfDir string
	tok   rlTokenizer
	eos   int
	chat  func([]tasks.Message) (string, error)
}

// isHFModelDir reports whether path is a Llama-family Hugging Face model directory.
func isHFModelDir(path string) bool {
	if st, err := os.Stat(filepath.Join(path, "config.json")); err != nil || st.IsDir() {
		return false
	}
	_, err := llama.ReadConfig(path)
	return err == nil
}

// hfDirOfRun returns the Hugging Face directory a run directory (or its checkpoint) was
// started from, "" when the run is a GPT-2's.
func hfDirOfRun(path string) string {
	p, err := load.Resolve(path)
	if err != nil {
		return ""
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(p), "config.json"))
	if err != nil {
		return ""
	}
	var meta rlRunMeta
	if json.Unmarshal(raw, &meta) != nil {
		return ""
	}
	return meta.HFDir
}

// openFamily loads the tokenizer side of a model: GPT-2's when hfDir is "", else the Hugging
// Face directory's.
func openFamily(hfDir string) (*modelFamily, error) {
	if hfDir == "" {
		tok, err := tokenizer.GPT2()
		if err != nil {
			return nil, err
		}
		return &modelFamily{tok: tok, eos: int(tokenizer.EOT)}, nil
	}
	cfg, err := llama.ReadConfig(hfDir)
	if err != nil {
		return nil, err
	}
	if len(cfg.EOS) == 0 {
		return nil, fmt.Errorf("%s: no eos_token_id in config.json or generation_config.json: generation would never stop", hfDir)
	}
	tok, err := hftok.Load(hfDir)
	if err != nil {
		return nil, err
	}
	f := &modelFamily{hfDir: hfDir, tok: rl.HFTokenizer{Tokenizer: tok}, eos: cfg.EOS[0]}
	if tmpl, err := hftok.LoadTemplate(hfDir); err == nil {
		f.chat = func(msgs []tasks.Message) (string, error) {
			in := make([]hftok.Message, len(msgs))
			for i, m := range msgs {
				in[i] = hftok.Message{Role: m.Role, Content: m.Content}
			}
			return tmpl.Render(in, hftok.ChatOptions{AddGenerationPrompt: true})
		}
	}
	return f, nil
}

// loadPolicy reads the model to fine-tune from path: a Llama-family Hugging Face directory (l
// nil), or any checkpoint or run directory (GPT-2 or Llama-family), placed on the run's backend.
func (r *rlRun) loadPolicy(path string) (p rl.Policy, l *load.Loaded, err error) {
	if isHFModelDir(path) {
		m, err := llama.Load(r.be, path)
		if err != nil {
			return nil, nil, err
		}
		return rl.Llama(m), nil, nil
	}
	if l, err = load.Read(path); err != nil {
		return nil, nil, err
	}
	if p, err = r.newPolicyOfShape(l); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	if err := r.be.Upload(p.Params(), l.Params); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	return p, l, nil
}

// describePolicy names a policy's shape for the log.
func describePolicy(p rl.Policy) string {
	switch m := p.(type) {
	case *rl.GPT2Policy:
		return m.Model.Config.String()
	case *rl.LlamaPolicy:
		c := m.Model.Config
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", c.Architecture, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
	}
	return fmt.Sprintf("%T", p)
}

// newPolicyOfShape makes a model of a resumed run's shape (its parameters come with the
// trainer's Restore).
func (r *rlRun) newPolicyOfShape(l *load.Loaded) (rl.Policy, error) {
	if l.Llama != nil {
		m, err := llama.New(r.be, *l.Llama)
		if err != nil {
			return nil, err
		}
		return rl.Llama(m), nil
	}
	m, err := gpt2.New(r.be, l.Config)
	if err != nil {
		return nil, err
	}
	return rl.GPT2(m), nil
}
