package episode

import (
	"encoding/json"
	"strings"

	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// Renderer writes an episode's conversation in the model's text.
type Renderer interface {
	Prompt(msgs []env.Message, tools []json.RawMessage) (string, error)
	Delta(msgs []env.Message, tools []json.RawMessage, closeTurn bool) (string, error)
	Conversation(msgs []env.Message, tools []json.RawMessage) (string, error)
	EndOfTurn() string
	ToolFormat() toolcall.Format
}

type plain struct{ eot string }

// NewPlainRenderer is the renderer of models without a chat template.
func NewPlainRenderer(endOfTurn string) Renderer { return plain{endOfTurn} }

func (p plain) Prompt(msgs []env.Message, _ []json.RawMessage) (string, error) {
	var b strings.Builder
	for i, m := range msgs {
		b.WriteString(m.Content)
		if i < len(msgs)-1 {
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

func (p plain) Delta(msgs []env.Message, _ []json.RawMessage, closeTurn bool) (string, error) {
	var b strings.Builder
	if closeTurn {
		b.WriteString(p.eot)
	}
	for _, m := range msgs {
		b.WriteString(m.Content + "\n")
	}
	return b.String(), nil
}

func (p plain) Conversation(msgs []env.Message, _ []json.RawMessage) (string, error) {
	return "", nil
}
func (p plain) EndOfTurn() string           { return p.eot }
func (p plain) ToolFormat() toolcall.Format { return toolcall.Hermes }
