package rl

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/toolcall"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

var weatherTool = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`)}

func weatherCall(city string) []toolcall.Call {
	return []toolcall.Call{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)}}
}

// toolConversation has two tool-call turns (the first without content), their tool replies
// and a final answer.
func toolConversation() []env.Message {
	return []env.Message{
		{Role: "system", Content: "You help."},
		{Role: "user", Content: "Weather in Paris and Rome?"},
		{Role: "assistant", ToolCalls: weatherCall("Paris")},
		{Role: "tool", Content: "18"},
		{Role: "assistant", Content: "Checking Rome.", ToolCalls: weatherCall("Rome")},
		{Role: "tool", Content: "24"},
		{Role: "assistant", Content: "Paris 18, Rome 24."},
	}
}

// thinkingConversation has thinking in turns that a later user query makes Qwen3 drop, so
// the conversation's rendering does not start with the rendering of its earlier turns.
func thinkingConversation() []env.Message {
	return []env.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", Content: "<think>\nLook it up.\n</think>\n\n", ToolCalls: weatherCall("Paris")},
		{Role: "tool", Content: "18"},
		{Role: "assistant", Content: "Paris is 18."},
		{Role: "user", Content: "And Rome?"},
		{Role: "assistant", Content: "<think>\nAgain.\n</think>\n\n", ToolCalls: weatherCall("Rome")},
		{Role: "tool", Content: "24"},
		{Role: "assistant", Content: "Rome is 24."},
	}
}

func call(city string) string {
	return "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + city + "\"}}\n</tool_call>"
}

// maskedRuns decodes each run of consecutive trained tokens.
func maskedRuns(t *testing.T, tok Tokenizer, ids []int32, mask []bool) []string {
	t.Helper()
	var runs []string
	for j := 0; j < len(ids); {
		if !mask[j] {
			j++
			continue
		}
		k := j
		for k < len(ids) && mask[k] {
			k++
		}
		s, err := tok.Decode(ids[j:k])
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, s)
		j = k
	}
	return runs
}

func qwenTokenizer(t *testing.T) Tokenizer {
	t.Helper()
	tok, err := hftok.Load(filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	return HFTokenizer{tok}
}

// The loss mask covers exactly the assistant turns (content, tool calls and end-of-turn
// token; not the header, not the newline after <|im_end|>), under Qwen2.5's and Qwen3's
// templates, over GPT-2's tokenizer (the templates' special tokens as text) and Qwen3's own.
// With Qwen3 the thinking of turns before the last user query is dropped from the rendering
// and the turns are still found.
func TestConversationTokensMaskTheAssistantTurns(t *testing.T) {
	gpt, err := tokenizer.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	qwen := qwenTokenizer(t)
	cases := []struct {
		template string
		msgs     []env.Message
		want     []string
	}{
		{"qwen2.5", toolConversation(), []string{
			call("Paris") + "<|im_end|>",
			"Checking Rome.\n" + call("Rome") + "<|im_end|>",
			"Paris 18, Rome 24.<|im_end|>"}},
		{"qwen3", toolConversation(), []string{
			call("Paris") + "<|im_end|>",
			"Checking Rome.\n" + call("Rome") + "<|im_end|>",
			"<think>\n\n</think>\n\nParis 18, Rome 24.<|im_end|>"}},
		{"qwen3", thinkingConversation(), []string{
			call("Paris") + "<|im_end|>",
			"Paris is 18.<|im_end|>",
			"<think>\nAgain.\n</think>\n\n" + call("Rome") + "<|im_end|>",
			"<think>\n\n</think>\n\nRome is 24.<|im_end|>"}},
	}
	for _, c := range cases {
		tmpl, err := hftok.TemplateNamed(c.template, "")
		if err != nil {
			t.Fatal(err)
		}
		render := HFChat(tmpl)
		full, err := render(c.msgs, weatherTool, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range []struct {
			name string
			tok  Tokenizer
		}{{"gpt2", gpt}, {"qwen3", qwen}} {
			ids, mask, err := ConversationTokens(render, tk.tok, c.msgs, weatherTool)
			if err != nil {
				t.Fatalf("%s over %s: %v", c.template, tk.name, err)
			}
			if want := tk.tok.Encode(full); !slices.Equal(ids, want) {
				t.Errorf("%s over %s: the ids are not the whole rendering encoded once", c.template, tk.name)
			}
			if got := maskedRuns(t, tk.tok, ids, mask); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s over %s: trained\n%q\nwant\n%q", c.template, tk.name, got, c.want)
			}
		}
	}
	// Qwen3 keeps the thinking of the first turn when it is rendered as the last: the
	// conversation's rendering does not extend it, which is the case the search handles.
	tmpl, _ := hftok.TemplateNamed("qwen3", "")
	msgs := thinkingConversation()
	full, _ := HFChat(tmpl)(msgs, nil, false)
	first, _ := HFChat(tmpl)(msgs[:2], nil, false)
	if len(first) >= len(full) || full[:len(first)] == first {
		t.Fatalf("qwen3 renders the first turn alike alone and in the conversation; the test needs them to differ")
	}
}

// Bad conversations are refused, not masked wrongly.
func TestConversationTokensErrors(t *testing.T) {
	gpt, _ := tokenizer.GPT2()
	tmpl, _ := hftok.TemplateNamed("qwen2.5", "")
	if _, _, err := ConversationTokens(HFChat(tmpl), gpt, []env.Message{{Role: "assistant", Content: "hi"}}, nil); err == nil {
		t.Error("a conversation opened by the assistant was laid out")
	}
	llama, _ := hftok.TemplateNamed("llama3", "<|begin_of_text|>")
	if _, _, err := ConversationTokens(HFChat(llama), gpt, toolConversation(), nil); err == nil {
		t.Error("tool calls under a template without them were laid out")
	}
	if _, _, err := ConversationTokens(HFChat(tmpl), charTok{toyAlphabet}, toolConversation(), nil); err == nil {
		t.Error("a tokenizer that cannot give token bytes was used")
	}
	// A template that rewrites an earlier turn's content, not only its thinking: the tail
	// that matches ("st<|im_end|>") is not the turn, and must not be trained.
	rewrite := ChatRender(func(msgs []env.Message, tools []json.RawMessage, gen bool) (string, error) {
		out := slices.Clone(msgs)
		for i := range out {
			if out[i].Role == "assistant" && i < len(out)-1 {
				out[i].Content = out[i].Content[3:]
			}
		}
		return HFChat(tmpl)(out, tools, gen)
	})
	two := []env.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "first"}, {Role: "user", Content: "b"}, {Role: "assistant", Content: "second"}}
	if _, _, err := ConversationTokens(rewrite, gpt, two, nil); err == nil {
		t.Error("a turn the template rewrote was laid out")
	}
}

// sftOnGPT2Vocab is a trainer over a small GPT-2 with GPT-2's vocabulary and a context long
// enough for the tool conversation.
func sftOnGPT2Vocab(t *testing.T, src PromptSource, lastTurnOnly bool) *SFTTrainer {
	t.Helper()
	m, err := gpt2.New(cpu.NewWithThreads(1), gpt2.Config{MaxSeqLen: 512, VocabSize: 50257, PaddedVocabSize: 50304, NumLayers: 1, NumHeads: 2, Channels: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.LR, cfg.MinLR, cfg.Warmup, cfg.LastTurnOnly = 20, 2, 1e-2, 1e-2, 0, lastTurnOnly
	tr, err := NewSFTTrainer(nn.GPT2(m), tok, src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := hftok.TemplateNamed("qwen2.5", "")
	tr.Chat = HFChat(tmpl)
	return tr
}

// With LastTurnOnly a conversation is the prompt and answer it was before conversations were
// trained whole: the same sequences, targets and loss as the prompt without its conversation.
// Otherwise every assistant turn's tokens are the targets, and training lowers their loss.
func TestSFTOnConversations(t *testing.T) {
	msgs := toolConversation()
	tmpl, _ := hftok.TemplateNamed("qwen2.5", "")
	text, err := HFChat(tmpl)(msgs[:len(msgs)-1], weatherTool, true)
	if err != nil {
		t.Fatal(err)
	}
	plain := Prompt{Text: text, Answer: msgs[len(msgs)-1].Content, Meta: Meta{}}
	conv := plain
	conv.Conversation, conv.Tools = msgs, weatherTool
	source := func(p Prompt) PromptSource { return &listSource{prompts: []Prompt{p}} }

	a, b := sftOnGPT2Vocab(t, source(plain), false), sftOnGPT2Vocab(t, source(conv), true)
	sa, err := a.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	gpt, _ := tokenizer.GPT2()
	if want := len(gpt.Encode(plain.Answer)) + 1; sa.Tokens != 2*want || sb.Tokens != sa.Tokens || sb.Loss != sa.Loss {
		t.Fatalf("last turn only: %d tokens, loss %v; the plain prompt %d tokens, loss %v; want %d tokens each and the same loss", sb.Tokens, sb.Loss, sa.Tokens, sa.Loss, 2*want)
	}

	all := sftOnGPT2Vocab(t, source(conv), false)
	_, mask, err := ConversationTokens(all.Chat, gpt, msgs, weatherTool)
	if err != nil {
		t.Fatal(err)
	}
	trained := 0
	for _, m := range mask[1:] {
		if m {
			trained++
		}
	}
	var first, last SFTStats
	for all.Step < all.Config.Steps {
		s, err := all.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if s.Step == 1 {
			first = s
		}
		last = s
	}
	if first.Tokens != 2*trained || trained <= sa.Tokens/2 {
		t.Fatalf("every turn: %d loss tokens a step, want %d (more than the last turn's %d)", first.Tokens, 2*trained, sa.Tokens/2)
	}
	if !(last.Loss < first.Loss/2) {
		t.Fatalf("loss on every assistant turn %.3f -> %.3f: want it halved", first.Loss, last.Loss)
	}
}

// listSource yields its prompts in a cycle.
type listSource struct {
	prompts []Prompt
	next    int
}

func (s *listSource) Next() (Prompt, error) {
	p := s.prompts[s.next%len(s.prompts)]
	s.next++
	return p, nil
}

// TestPlainConversationTokens: a conversation for a model without a chat template is laid out
// as its episode would be: the plain renderer's prompt and replies, each encoded alone, and
// each turn's tokens with the EOS, which alone are trained.
func TestPlainConversationTokens(t *testing.T) {
	tok := chatToy
	eos := int32(len(chatAlphabet))
	msgs := []env.Message{{Role: "system", Content: "ab"}, {Role: "user", Content: "c="}, {Role: "assistant", Content: "dd"},
		{Role: "tool", Content: "12"}, {Role: "user", Content: "e"}, {Role: "assistant", Content: "f+g"}}
	ids, mask, err := PlainConversationTokens(tok, msgs, eos)
	if err != nil {
		t.Fatal(err)
	}
	r := episode.NewPlainRenderer(EOSText)
	prompt, _ := r.Prompt(msgs[:2], nil)
	reply, _ := r.Delta(msgs[3:5], nil, false)
	var want []int32
	var wantMask []bool
	for _, part := range []struct {
		ids     []int32
		trained bool
	}{{tok.Encode(prompt), false}, {append(tok.Encode("dd"), eos), true}, {tok.Encode(reply), false}, {append(tok.Encode("f+g"), eos), true}} {
		want = append(want, part.ids...)
		for range part.ids {
			wantMask = append(wantMask, part.trained)
		}
	}
	if !slices.Equal(ids, want) || !slices.Equal(mask, wantMask) {
		t.Errorf("ids %v mask %v,\nwant %v mask %v", ids, mask, want, wantMask)
	}
	if _, _, err := PlainConversationTokens(tok, msgs[2:3], eos); err == nil {
		t.Error("a conversation opened by the assistant was laid out")
	}
}
