package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
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
	// chat renders a dataset's prompt (in plain text without a template), turns renders
	// whole conversations for training (nil without a template).
	chat  func([]tasks.Message, []json.RawMessage) (string, error)
	turns rl.ChatRender
	// template is the chat template episodes are rendered in (nil: none, or templateErr says
	// why the model's own cannot be rendered).
	template    hftok.Template
	templateErr error
	// special encodes text with the special tokens written in it as their ids (a template's
	// <|im_end|>, GPT-2's <|endoftext|>), as an episode's rendered text needs; pieces returns
	// the bytes of ids.
	special episode.Tokenizer
	pieces  func(ids []int32) ([]byte, error)
}

// gpt2Special is GPT-2's tokenizer reading <|endoftext|> in text as the EOS token.
type gpt2Special struct{ *tokenizer.Tokenizer }

func (t gpt2Special) Encode(text string) []int32 { return t.EncodeSpecial(text) }

// hfDirOfRun returns the Hugging Face directory a run directory (or its checkpoint) was
// started from, "" when the run is a GPT-2's.
func hfDirOfRun(path string) string {
	p, err := load.Resolve(path)
	if err != nil {
		return ""
	}
	raw, err := rundir.ReadConfig(filepath.Dir(p))
	if err != nil {
		return ""
	}
	var meta rlRunMeta
	if json.Unmarshal(raw, &meta) != nil {
		return ""
	}
	return meta.HFDir
}

// familyTemplates are the chat templates of a Llama-family model over GPT-2's tokenizer (a
// random model of a preset's shape), by model_type.
var familyTemplates = map[string]string{"qwen2": "qwen2.5", "qwen3": "qwen3", "llama": "llama3.1"}

// openFamily loads the tokenizer side of a model: the Hugging Face directory's, or GPT-2's when
// hfDir is "" (with the chat template of modelType's family for a Llama-family model).
func openFamily(hfDir, modelType string) (*modelFamily, error) {
	if hfDir == "" {
		tok, err := tokenizer.GPT2()
		if err != nil {
			return nil, err
		}
		f := &modelFamily{tok: tok, eos: int(tokenizer.EOT), chat: plainPrompt, special: gpt2Special{tok}, pieces: tok.DecodeBytes}
		if name, ok := familyTemplates[modelType]; ok {
			tmpl, err := hftok.TemplateNamed(name, "<|begin_of_text|>")
			if err != nil {
				return nil, err
			}
			f.chat, f.turns, f.template = renderer(tmpl), rl.HFChat(tmpl), tmpl
		}
		return f, nil
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
	ht := rl.HFTokenizer{Tokenizer: tok}
	f := &modelFamily{hfDir: hfDir, tok: ht, eos: cfg.EOS[0], chat: plainPrompt, special: ht, pieces: ht.DecodeBytes}
	switch tmpl, err := hftok.LoadTemplate(hfDir); {
	case err == nil:
		f.chat, f.turns, f.template = renderer(tmpl), rl.HFChat(tmpl), tmpl
	case !errors.Is(err, hftok.ErrNoTemplate):
		// The template is there but is not one vkgrad renders: a dataset's messages say why.
		f.chat = func([]tasks.Message, []json.RawMessage) (string, error) { return "", err }
		f.turns = func([]env.Message, []json.RawMessage, bool) (string, error) { return "", err }
		f.templateErr = err
	}
	return f, nil
}

// plainPrompt is a prompt in a conversation's messages for a model without a chat template,
// as its episodes write one (episode.NewPlainRenderer): the contents joined by newlines,
// without roles or tools.
func plainPrompt(msgs []tasks.Message, _ []json.RawMessage) (string, error) {
	in := make([]env.Message, len(msgs))
	for i, m := range msgs {
		in[i] = env.Message{Role: m.Role, Content: m.Content}
	}
	return episode.NewPlainRenderer(rl.EOSText).Prompt(in, nil)
}

// renderer renders a dataset's conversation, with the tools its row offers, as a prompt, the
// assistant's turn opened.
func renderer(tmpl hftok.Template) func([]tasks.Message, []json.RawMessage) (string, error) {
	return func(msgs []tasks.Message, tools []json.RawMessage) (string, error) {
		in := make([]hftok.Message, len(msgs))
		for i, m := range msgs {
			in[i] = hftok.Message{Role: m.Role, Content: m.Content}
			for _, c := range m.ToolCalls {
				in[i].ToolCalls = append(in[i].ToolCalls, hftok.ToolCall{Function: &hftok.ToolFunction{Name: c.Name, Arguments: c.Arguments}})
			}
		}
		return tmpl.Render(in, hftok.ChatOptions{AddGenerationPrompt: true, Tools: tools})
	}
}

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

// loraFlags add LoRA adapters to a Llama-family model; saved in the run's config.json.
type loraFlags struct {
	Rank    int      `json:"r,omitempty"`
	Alpha   float64  `json:"alpha,omitempty"`
	Targets []string `json:"targets,omitempty"`
	Seed    uint64   `json:"seed,omitempty"`
}

func addLoRAFlags(fs *pflag.FlagSet, l *loraFlags) {
	fs.IntVar(&l.Rank, "lora-rank", l.Rank, "train LoRA adapters of this rank instead of every weight (Llama-family models; 0: full fine-tuning); the reference model is then the frozen base")
	fs.Float64Var(&l.Alpha, "lora-alpha", l.Alpha, "LoRA scale numerator: adapters add (alpha/rank)·B·A (0: twice the rank)")
	fs.StringSliceVar(&l.Targets, "lora-targets", l.Targets, "linear layers given adapters, by Hugging Face name (default: all of "+strings.Join(llama.LoRAModules, ", ")+")")
	fs.Uint64Var(&l.Seed, "lora-seed", l.Seed, "seed of the adapters' random A matrices")
}

// config is the adapters' settings (ok false without --lora-rank).
func (l loraFlags) config() (cfg llama.LoRAConfig, ok bool, err error) {
	if l.Rank < 0 {
		return cfg, false, fmt.Errorf("--lora-rank %d: want >= 0 (0: full fine-tuning)", l.Rank)
	}
	if l.Rank == 0 {
		return cfg, false, nil
	}
	cfg = llama.LoRAConfig{Rank: l.Rank, Alpha: l.Alpha, Targets: l.Targets}
	if cfg.Alpha == 0 {
		cfg.Alpha = 2 * float64(l.Rank)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("--lora-rank/--lora-alpha/--lora-targets: %w", err)
	}
	return cfg, true, nil
}

// addAdapters gives a freshly loaded policy the adapters --lora-rank asks for. A model whose
// checkpoint already holds adapters keeps training them.
func (r *rlRun) addAdapters(p rl.Policy) error {
	cfg, ok, err := r.lora.config()
	if err != nil || !ok {
		return err
	}
	lp, isLlama := p.(*nn.LlamaLM)
	if !isLlama {
		return fmt.Errorf("--lora-rank: LoRA adapters are for Llama-family models, not a GPT-2 (%s)", describePolicy(p))
	}
	if have, already := lp.Model.LoRA(); already {
		return fmt.Errorf("--lora-rank %d: the model already has adapters (rank %d); leave the LoRA flags out to keep training them", cfg.Rank, have.Rank)
	}
	return lp.Model.EnableLoRA(cfg, r.lora.Seed)
}

// loadPolicy reads the model to fine-tune from path: a Llama-family Hugging Face directory (l
// nil), or any checkpoint or run directory (GPT-2 or Llama-family, with its adapters), placed on
// the run's backend.
func (r *rlRun) loadPolicy(path string) (p rl.Policy, l *load.Loaded, err error) {
	if ok, err := isHFModelDir(path); err != nil {
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

// describePolicy names a policy's shape for the log.
func describePolicy(p rl.Policy) string {
	switch m := p.(type) {
	case *nn.GPT2LM:
		return m.Model.Config.String()
	case *nn.LlamaLM:
		c := m.Model.Config
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", c.Architecture, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
	}
	return fmt.Sprintf("%T", p)
}

// policyOf places a checkpoint's model, adapters included, on the run's backend.
func (r *rlRun) policyOf(l *load.Loaded) (rl.Policy, error) {
	if l.Llama != nil {
		m, err := newLlamaOfState(r.be, l)
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
