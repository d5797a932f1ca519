package episode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// Renderer writes an episode's conversation in the model's text. An episode's text is the
// prompt, then each assistant turn as sampled (with its end-of-turn token unless it was cut)
// followed by the delta of the environment's reply; it is never rendered again as a whole.
type Renderer interface {
	// Prompt renders the opening messages with tools offered (nil: none), ending with the
	// assistant's turn opened.
	Prompt(msgs []env.Message, tools []json.RawMessage) (string, error)
	// Delta renders msgs, the environment's reply to an assistant turn, as the text that
	// follows the turn's sampled tokens and ends with the next assistant turn opened.
	// closeTurn: the turn had no end-of-turn token, and the delta opens with it.
	Delta(msgs []env.Message, tools []json.RawMessage, closeTurn bool) (string, error)
	// Conversation renders a whole conversation (assistant turns as their sampled text, tool
	// calls verbatim in the content) as the template renders it from scratch, ending right
	// after the last assistant turn's end-of-turn text: what re-templating would train on.
	// Messages after the last assistant turn are not rendered.
	Conversation(msgs []env.Message, tools []json.RawMessage) (string, error)
	// EndOfTurn is the text of the token that ends an assistant turn.
	EndOfTurn() string
	// ToolFormat is how the family writes tool calls (toolcall.Hermes or toolcall.Llama31).
	ToolFormat() toolcall.Format
}

// chatFamily is what a template's name tells beyond the template itself.
type chatFamily struct {
	endOfTurn  string
	toolFormat toolcall.Format
}

// chatFamilies are the templates nn/hftok renders. Llama 3 and Qwen2 have no tools in their
// templates; a model prompted with tools in its text is read as writing Hermes calls.
var chatFamilies = map[string]chatFamily{
	"llama3":        {"<|eot_id|>", toolcall.Hermes},
	"llama3.1":      {"<|eot_id|>", toolcall.Llama31},
	"llama3.2":      {"<|eot_id|>", toolcall.Llama31},
	"qwen2":         {"<|im_end|>", toolcall.Hermes},
	"qwen2.5":       {"<|im_end|>", toolcall.Hermes},
	"qwen2.5-early": {"<|im_end|>", toolcall.Hermes},
	"qwen3":         {"<|im_end|>", toolcall.Hermes},
}

// chatRenderer renders through a model's chat template.
type chatRenderer struct {
	template hftok.Template
	family   chatFamily
}

// NewChatRenderer returns the Renderer of a chat template nn/hftok knows. It refuses a
// template whose rendering of an environment reply changes the text of the turns before it,
// since then no delta appended to the sampled tokens reproduces the template.
func NewChatRenderer(t hftok.Template) (Renderer, error) {
	if t == nil {
		return nil, errors.New("episode: no chat template")
	}
	family, ok := chatFamilies[t.Name()]
	if !ok {
		return nil, fmt.Errorf("episode: chat template %q: its end-of-turn token is not known (have llama3, llama3.1, llama3.2, qwen2, qwen2.5, qwen2.5-early, qwen3)", t.Name())
	}
	r := &chatRenderer{template: t, family: family}
	probe := []env.Message{{Role: "tool", Content: "4"}, {Role: "user", Content: "Go on."}}
	if _, err := r.Delta(probe, nil, false); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *chatRenderer) EndOfTurn() string           { return r.family.endOfTurn }
func (r *chatRenderer) ToolFormat() toolcall.Format { return r.family.toolFormat }

func (r *chatRenderer) Prompt(msgs []env.Message, tools []json.RawMessage) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("episode: prompt: no messages")
	}
	hm, err := templateMessages(msgs, conversationRoles)
	if err != nil {
		return "", fmt.Errorf("episode: prompt: %w", err)
	}
	return r.render("prompt", hm, tools, true)
}

// The placeholder turn a reply is rendered after: a query and an answer that no template trims,
// and an answer without thinking, which Qwen3 would drop once a user message follows.
const (
	placeholderQuery  = "Q"
	placeholderAnswer = "A"
)

// Delta renders the reply after a placeholder turn and keeps what follows the turn's
// end-of-turn text. The templates render a reply the same whatever came before the turn
// (the tools go to the system or first user turn, which the placeholder provides), so the
// placeholder's delta is every turn's.
func (r *chatRenderer) Delta(msgs []env.Message, tools []json.RawMessage, closeTurn bool) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("episode: delta: no messages (an environment's reply has at least one)")
	}
	reply, err := templateMessages(msgs, replyRoles)
	if err != nil {
		return "", fmt.Errorf("episode: delta: %w", err)
	}
	opening := []hftok.Message{{Role: "user", Content: placeholderQuery}}
	prompt, err := r.render("delta", opening, tools, true)
	if err != nil {
		return "", err
	}
	conv := append(opening, hftok.Message{Role: "assistant", Content: placeholderAnswer})
	whole, err := r.render("delta", append(conv, reply...), tools, true)
	if err != nil {
		return "", err
	}
	turn := prompt + placeholderAnswer + r.family.endOfTurn
	if !strings.HasPrefix(whole, turn) {
		return "", fmt.Errorf("episode: delta: the %s template is not prefix-preserving: followed by the reply, the turn %q renders as %q",
			r.template.Name(), turn, whole[:min(len(whole), len(turn))])
	}
	delta := whole[len(turn):]
	if closeTurn {
		delta = r.family.endOfTurn + delta
	}
	return delta, nil
}

func (r *chatRenderer) Conversation(msgs []env.Message, tools []json.RawMessage) (string, error) {
	hm, err := templateMessages(msgs, conversationRoles)
	if err != nil {
		return "", fmt.Errorf("episode: conversation: %w", err)
	}
	last := lastAssistant(msgs)
	if last < 0 {
		return "", errors.New("episode: conversation: no assistant message")
	}
	text, err := r.render("conversation", hm[:last+1], tools, false)
	if err != nil {
		return "", err
	}
	eot := r.family.endOfTurn
	end := strings.LastIndex(text, eot)
	if end < 0 || strings.TrimSpace(text[end+len(eot):]) != "" {
		return "", fmt.Errorf("episode: conversation: the %s template does not end the last assistant turn with %s", r.template.Name(), eot)
	}
	return text[:end+len(eot)], nil
}

// render applies the template; an empty tool list offers none, as nil does.
func (r *chatRenderer) render(what string, msgs []hftok.Message, tools []json.RawMessage, generationPrompt bool) (string, error) {
	if len(tools) == 0 {
		tools = nil
	}
	for i, tool := range tools {
		var spec map[string]json.RawMessage
		if json.Unmarshal(tool, &spec) != nil || spec == nil {
			return "", fmt.Errorf("episode: %s: tool %d is not a JSON object: %.60s", what, i, tool)
		}
	}
	text, err := r.template.Render(msgs, hftok.ChatOptions{AddGenerationPrompt: generationPrompt, Tools: tools})
	if err != nil {
		return "", fmt.Errorf("episode: %s: %s template: %w", what, r.template.Name(), err)
	}
	return text, nil
}

// The roles a conversation holds, and those of an environment's reply.
var (
	conversationRoles = []string{"system", "user", "assistant", "tool"}
	replyRoles        = []string{"tool", "user"}
)

// templateMessages converts messages for a template, refusing roles outside roles. An
// assistant message's tool calls are not passed on: its content, the sampled text, holds them;
// nor is a tool message's Error, which its content tells.
func templateMessages(msgs []env.Message, roles []string) ([]hftok.Message, error) {
	out := make([]hftok.Message, len(msgs))
	for i, m := range msgs {
		if err := checkRole(i, m.Role, roles); err != nil {
			return nil, err
		}
		out[i] = hftok.Message{Role: m.Role, Content: m.Content}
	}
	return out, nil
}

func checkRole(i int, role string, roles []string) error {
	for _, r := range roles {
		if role == r {
			return nil
		}
	}
	return fmt.Errorf("message %d has role %q; want %s", i, role, strings.Join(roles, ", "))
}

// lastAssistant is the index of the last assistant message, -1 when there is none.
func lastAssistant(msgs []env.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			return i
		}
	}
	return -1
}

// plainRenderer writes a conversation for a model without a chat template: contents only,
// no roles, no tools.
type plainRenderer struct {
	endOfTurn string
}

// NewPlainRenderer returns the Renderer of a model without a chat template, whose turns end
// with endOfTurn (its end-of-sequence token, such as GPT-2's <|endoftext|>). The opening
// messages' contents are the prompt, joined by newlines (one message is used as it is); each
// message of an environment reply is its content and a newline; tools are not rendered (a
// prompt that offers tools describes them in its text).
func NewPlainRenderer(endOfTurn string) Renderer {
	return plainRenderer{endOfTurn: endOfTurn}
}

func (p plainRenderer) EndOfTurn() string           { return p.endOfTurn }
func (p plainRenderer) ToolFormat() toolcall.Format { return toolcall.Hermes }

func (p plainRenderer) Prompt(msgs []env.Message, _ []json.RawMessage) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("episode: prompt: no messages")
	}
	contents := make([]string, len(msgs))
	for i, m := range msgs {
		if err := checkRole(i, m.Role, conversationRoles); err != nil {
			return "", fmt.Errorf("episode: prompt: %w", err)
		}
		contents[i] = m.Content
	}
	return strings.Join(contents, "\n"), nil
}

func (p plainRenderer) Delta(msgs []env.Message, _ []json.RawMessage, closeTurn bool) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("episode: delta: no messages (an environment's reply has at least one)")
	}
	var b strings.Builder
	if closeTurn {
		b.WriteString(p.endOfTurn)
	}
	for i, m := range msgs {
		if err := checkRole(i, m.Role, replyRoles); err != nil {
			return "", fmt.Errorf("episode: delta: %w", err)
		}
		b.WriteString(m.Content + "\n")
	}
	return b.String(), nil
}

// Conversation writes the messages before the first assistant turn as Prompt does, and each
// later message as Delta and the sampled turns would.
func (p plainRenderer) Conversation(msgs []env.Message, _ []json.RawMessage) (string, error) {
	for i, m := range msgs {
		if err := checkRole(i, m.Role, conversationRoles); err != nil {
			return "", fmt.Errorf("episode: conversation: %w", err)
		}
	}
	last := lastAssistant(msgs)
	if last < 0 {
		return "", errors.New("episode: conversation: no assistant message")
	}
	first := 0
	for msgs[first].Role != "assistant" {
		first++
	}
	var b strings.Builder
	for i, m := range msgs[:first] {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(m.Content)
	}
	for _, m := range msgs[first : last+1] {
		if m.Role == "assistant" {
			b.WriteString(m.Content + p.endOfTurn)
		} else {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String(), nil
}
