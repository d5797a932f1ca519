package rlrun

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// Tokenizer is what the fine-tuning commands encode prompts and decode completions with.
type Tokenizer interface {
	rl.Tokenizer
	VocabSize() int
}

// Family is what a run's model brings beside its weights: the tokenizer, the end-of-sequence
// id and, for chat models, the chat template datasets' messages are rendered in.
type Family struct {
	// HFDir is the Hugging Face directory of a Llama-family model ("" for GPT-2): its
	// tokenizer.json, tokenizer_config.json and generation_config.json.
	HFDir string
	Tok   Tokenizer
	EOS   int
	// Chat renders a dataset's prompt (in plain text without a template), Turns renders
	// whole conversations for training (nil without a template).
	Chat  func([]tasks.Message, []json.RawMessage) (string, error)
	Turns rl.ChatRender
	// Template is the chat template episodes are rendered in (nil: none, or TemplateErr says
	// why the model's own cannot be rendered).
	Template    hftok.Template
	TemplateErr error
	// Special encodes text with the special tokens written in it as their ids (a template's
	// <|im_end|>, GPT-2's <|endoftext|>), as an episode's rendered text needs; Pieces returns
	// the bytes of ids.
	Special episode.Tokenizer
	Pieces  func(ids []int32) ([]byte, error)
}

// gpt2Special is GPT-2's tokenizer reading <|endoftext|> in text as the EOS token.
type gpt2Special struct{ *tokenizer.Tokenizer }

func (t gpt2Special) Encode(text string) []int32 { return t.EncodeSpecial(text) }

// familyTemplates are the chat templates of a Llama-family model over GPT-2's tokenizer (a
// random model of a preset's shape), by model_type.
var familyTemplates = map[string]string{"qwen2": "qwen2.5", "qwen3": "qwen3", "llama": "llama3.1"}

// OpenFamily loads the tokenizer side of a model: the Hugging Face directory's, or GPT-2's when
// hfDir is "" (with the chat template of modelType's family for a Llama-family model).
func OpenFamily(hfDir, modelType string) (*Family, error) {
	if hfDir == "" {
		tok, err := tokenizer.GPT2()
		if err != nil {
			return nil, err
		}
		f := &Family{Tok: tok, EOS: int(tokenizer.EOT), Chat: plainPrompt, Special: gpt2Special{tok}, Pieces: tok.DecodeBytes}
		if name, ok := familyTemplates[modelType]; ok {
			tmpl, err := hftok.TemplateNamed(name, "<|begin_of_text|>")
			if err != nil {
				return nil, err
			}
			f.Chat, f.Turns, f.Template = renderer(tmpl), rl.HFChat(tmpl), tmpl
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
	f := &Family{HFDir: hfDir, Tok: ht, EOS: cfg.EOS[0], Chat: plainPrompt, Special: ht, Pieces: ht.DecodeBytes}
	switch tmpl, err := hftok.LoadTemplate(hfDir); {
	case err == nil:
		f.Chat, f.Turns, f.Template = renderer(tmpl), rl.HFChat(tmpl), tmpl
	case !errors.Is(err, hftok.ErrNoTemplate):
		// The template is there but is not one vkgrad renders: a dataset's messages say why.
		f.Chat = func([]tasks.Message, []json.RawMessage) (string, error) { return "", err }
		f.Turns = func([]env.Message, []json.RawMessage, bool) (string, error) { return "", err }
		f.TemplateErr = err
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
