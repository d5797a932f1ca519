package rl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
)

// ChatRender renders a conversation, with the function specs offered (OpenAI style; nil:
// none), in a model's chat template; generation ends the text with the assistant's turn opened.
type ChatRender func(msgs []env.Message, tools []json.RawMessage, generation bool) (string, error)

// HFChat renders with a Hugging Face chat template.
func HFChat(tmpl hftok.Template) ChatRender {
	return func(msgs []env.Message, tools []json.RawMessage, generation bool) (string, error) {
		in := make([]hftok.Message, len(msgs))
		for i, m := range msgs {
			in[i] = hftok.Message{Role: m.Role, Content: m.Content}
			for _, c := range m.ToolCalls {
				in[i].ToolCalls = append(in[i].ToolCalls, hftok.ToolCall{Function: &hftok.ToolFunction{Name: c.Name, Arguments: c.Arguments}})
			}
		}
		return tmpl.Render(in, hftok.ChatOptions{AddGenerationPrompt: generation, Tools: tools})
	}
}

// ConversationTokens lays out a conversation for supervised training on every assistant turn,
// as a chat template renders it for training: the whole conversation rendered once (no
// generation prompt) and encoded whole, and a mask that is true on the tokens of each
// assistant turn, from after its role header through its end-of-turn token (not the white
// space the template writes after that). A token that straddles a turn's edge is trained.
func ConversationTokens(render ChatRender, tok Tokenizer, msgs []env.Message, tools []json.RawMessage) (ids []int32, mask []bool, err error) {
	text, spans, err := assistantSpans(render, msgs, tools)
	if err != nil {
		return nil, nil, err
	}
	ids = tok.Encode(text)
	ends, err := tokenEnds(tok, ids, text)
	if err != nil {
		return nil, nil, err
	}
	mask = make([]bool, len(ids))
	k, start := 0, 0
	for j, end := range ends {
		for k < len(spans) && spans[k][1] <= start {
			k++
		}
		mask[j] = k < len(spans) && start < spans[k][1] && end > spans[k][0]
		start = end
	}
	return ids, mask, nil
}

// byteDecoder is a tokenizer that gives the bytes of tokens, a character split across
// tokens included.
type byteDecoder interface {
	DecodeBytes(ids []int32) ([]byte, error)
}

// tokenEnds returns the byte offset in text where each token ends, checking the tokens spell
// text exactly.
func tokenEnds(tok Tokenizer, ids []int32, text string) ([]int, error) {
	bd, ok := tok.(byteDecoder)
	if !ok {
		return nil, fmt.Errorf("a %T cannot give the bytes of each token, which the turns' loss mask needs", tok)
	}
	ends := make([]int, len(ids))
	var spelled []byte
	for j, id := range ids {
		b, err := bd.DecodeBytes([]int32{id})
		if err != nil {
			return nil, err
		}
		spelled = append(spelled, b...)
		ends[j] = len(spelled)
	}
	if !bytes.Equal(spelled, []byte(text)) {
		return nil, errors.New("the tokens of the rendered conversation do not spell it back (a normalising tokenizer?): the assistant turns cannot be found among them")
	}
	return ends, nil
}

// assistantSpans renders the conversation and finds the byte range of each assistant turn in
// that one text. A turn is first rendered as the conversation's last (the text up to it with
// the generation prompt, then with the turn); where the conversation's rendering starts with
// that, the turn is found in place. A template may render an earlier turn differently once
// more follows (Qwen3 drops the thinking of turns before the last user query), so otherwise
// the turn is the longest tail of its last-turn rendering found right after the next
// assistant header.
func assistantSpans(render ChatRender, msgs []env.Message, tools []json.RawMessage) (string, [][2]int, error) {
	full, err := render(msgs, tools, false)
	if err != nil {
		return "", nil, err
	}
	var spans [][2]int
	cursor := 0
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		if i == 0 {
			return "", nil, errors.New("message 0 is the assistant's: a conversation to train on opens with a system or user turn")
		}
		opened, header, turn, err := lastTurn(render, msgs[:i+1], tools)
		if err != nil {
			return "", nil, fmt.Errorf("message %d: %w", i, err)
		}
		start := len(opened)
		if !strings.HasPrefix(full, opened) || start < cursor {
			at := strings.Index(full[cursor:], header)
			if at < 0 {
				return "", nil, fmt.Errorf("message %d: no assistant header %q in the rendered conversation", i, header)
			}
			start = cursor + at + len(header)
		}
		n := longestTailAt(full[start:], turn)
		if n == 0 || !strings.Contains(full[start:start+n], visibleContent(m.Content)) {
			// A tail without the turn's visible content would train the wrong tokens: the
			// template rewrote more than the turn's thinking.
			return "", nil, fmt.Errorf("message %d: the assistant turn is not where the rendered conversation has it", i)
		}
		spans = append(spans, [2]int{start, start + n})
		cursor = start + n
	}
	return full, spans, nil
}

// lastTurn renders msgs, whose last message is an assistant turn, as the template writes a
// final turn: the text before the turn's content (the conversation so far and the generation
// prompt), the generation prompt alone (the assistant's header), and the turn itself through
// its end-of-turn token.
func lastTurn(render ChatRender, msgs []env.Message, tools []json.RawMessage) (opened, header, turn string, err error) {
	before, err := render(msgs[:len(msgs)-1], tools, false)
	if err != nil {
		return "", "", "", err
	}
	if opened, err = render(msgs[:len(msgs)-1], tools, true); err != nil {
		return "", "", "", err
	}
	if !strings.HasPrefix(opened, before) || len(opened) == len(before) {
		return "", "", "", errors.New("the template's generation prompt does not extend the conversation before the turn")
	}
	through, err := render(msgs, tools, false)
	if err != nil {
		return "", "", "", err
	}
	if !strings.HasPrefix(through, opened) {
		return "", "", "", errors.New("the template renders the turn without the header its generation prompt opens")
	}
	return opened, opened[len(before):], strings.TrimRightFunc(through[len(opened):], unicode.IsSpace), nil
}

// visibleContent is an assistant message's content after its thinking, trimmed: the part
// every rendering of the turn keeps.
func visibleContent(content string) string {
	if i := strings.LastIndex(content, "</think>"); i >= 0 {
		content = content[i+len("</think>"):]
	}
	return strings.TrimSpace(content)
}

// longestTailAt is the length of the longest suffix of turn that text starts with (0: none).
func longestTailAt(text, turn string) int {
	for k := 0; k < len(turn); k++ {
		if strings.HasPrefix(text, turn[k:]) {
			return len(turn) - k
		}
	}
	return 0
}

// PlainConversationTokens lays out a conversation for a model without a chat template as its
// episodes are written (episode.NewPlainRenderer): the opening messages as the prompt, each
// assistant turn's content and eos, trained, and each run of other messages as a reply, not
// trained. Each part is encoded alone, as an episode encodes its prompt, samples its turns and
// encodes each reply.
func PlainConversationTokens(tok Tokenizer, msgs []env.Message, eos int32) (ids []int32, mask []bool, err error) {
	first := slices.IndexFunc(msgs, func(m env.Message) bool { return m.Role == "assistant" })
	if first < 1 {
		return nil, nil, errors.New("a conversation to train on opens with a system or user turn and has an assistant turn")
	}
	add := func(part []int32, trained bool) {
		ids = append(ids, part...)
		for range part {
			mask = append(mask, trained)
		}
	}
	plain := episode.NewPlainRenderer(EOSText)
	prompt, err := plain.Prompt(msgs[:first], nil)
	if err != nil {
		return nil, nil, err
	}
	add(tok.Encode(prompt), false)
	for rest := msgs[first:]; len(rest) > 0; {
		if rest[0].Role == "assistant" {
			add(append(tok.Encode(rest[0].Content), eos), true)
			rest = rest[1:]
			continue
		}
		n := slices.IndexFunc(rest, func(m env.Message) bool { return m.Role == "assistant" })
		if n < 0 {
			n = len(rest)
		}
		reply, err := plain.Delta(rest[:n], nil, false)
		if err != nil {
			return nil, nil, err
		}
		add(tok.Encode(reply), false)
		rest = rest[n:]
	}
	return ids, mask, nil
}
