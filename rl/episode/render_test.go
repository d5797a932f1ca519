package episode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// renderCase is a conversation of testdata/render_cases.json: opening messages, then
// assistant turns as sampled, each but the last answered by the environment.
type renderCase struct {
	Name      string            `json:"name"`
	Templates []string          `json:"templates"`
	Tools     []json.RawMessage `json:"tools"`
	Opening   []env.Message     `json:"opening"`
	Turns     []struct {
		Text      string        `json:"text"`
		Truncated bool          `json:"truncated"`
		Reply     []env.Message `json:"reply"`
	} `json:"turns"`
}

// renderGolden is @huggingface/jinja's rendering of a case (render_goldens.mjs): Steps[k] is
// the conversation through the reply to turn k-1 (Steps[0] the opening) with the generation
// prompt, Full the whole conversation.
type renderGolden struct {
	Case     string   `json:"case"`
	Template string   `json:"template"`
	Tools    bool     `json:"tools"`
	Steps    []string `json:"steps"`
	Full     string   `json:"full"`
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// datedTemplate fixes Llama 3.2's date, which is otherwise today's, as the goldens do.
type datedTemplate struct {
	hftok.Template
	date string
}

func (d datedTemplate) Render(msgs []hftok.Message, o hftok.ChatOptions) (string, error) {
	o.Date = d.date
	return d.Template.Render(msgs, o)
}

// loadTemplates reads the published template texts as a model directory's
// tokenizer_config.json would give them.
func loadTemplates(t *testing.T) map[string]hftok.Template {
	t.Helper()
	var texts map[string]string
	readJSON(t, "render_templates.json", &texts)
	out := map[string]hftok.Template{}
	for name, text := range texts {
		cfg := map[string]any{"chat_template": text}
		if strings.HasPrefix(name, "llama") {
			cfg["bos_token"] = "<|begin_of_text|>"
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		tmpl, err := hftok.LoadTemplate(dir)
		if err != nil {
			t.Fatalf("template %s: %v", name, err)
		}
		if tmpl.Name() != name {
			t.Fatalf("template %s is recognised as %s", name, tmpl.Name())
		}
		if name == "llama3.2" {
			tmpl = datedTemplate{Template: tmpl, date: "15 Mar 2025"}
		}
		out[name] = tmpl
	}
	return out
}

// goldenFixture is everything the golden tests read.
type goldenFixture struct {
	cases     map[string]renderCase
	goldens   []renderGolden
	renderers map[string]Renderer
}

func loadGoldens(t *testing.T) goldenFixture {
	t.Helper()
	var cases struct {
		Cases []renderCase `json:"cases"`
	}
	readJSON(t, "render_cases.json", &cases)
	var goldens struct {
		Goldens []renderGolden `json:"goldens"`
	}
	readJSON(t, "render_goldens.json", &goldens)
	f := goldenFixture{cases: map[string]renderCase{}, goldens: goldens.Goldens, renderers: map[string]Renderer{}}
	for _, c := range cases.Cases {
		f.cases[c.Name] = c
	}
	for name, tmpl := range loadTemplates(t) {
		r, err := NewChatRenderer(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		f.renderers[name] = r
	}
	if len(f.goldens) != 36 || len(f.renderers) != 7 {
		t.Fatalf("%d goldens and %d templates; want 36 and 7", len(f.goldens), len(f.renderers))
	}
	return f
}

func (f goldenFixture) tools(g renderGolden) []json.RawMessage {
	if g.Tools {
		return f.cases[g.Case].Tools
	}
	return nil
}

// messages is the case's conversation through its first n turns and their replies.
func (c renderCase) messages(n int) []env.Message {
	msgs := slices.Clone(c.Opening)
	for _, turn := range c.Turns[:n] {
		msgs = append(msgs, env.Message{Role: "assistant", Content: turn.Text})
		msgs = append(msgs, turn.Reply...)
	}
	return msgs
}

// turnView is how a rendering of msgs writes the content of assistant message i.
type turnView func(msgs []env.Message, i int) string

func sampled(msgs []env.Message, i int) string { return msgs[i].Content }

// templateView is how the template writes an assistant turn when rendering a conversation
// from scratch: Llama's templates trim it, and Qwen3 drops the thinking of turns before the
// last user query and gives a final turn without thinking an empty thinking block. Turns here
// have no white space Qwen3 would strip around their thinking.
func templateView(template string) turnView {
	switch {
	case strings.HasPrefix(template, "llama"):
		return func(msgs []env.Message, i int) string { return strings.TrimSpace(msgs[i].Content) }
	case template == "qwen3":
		return qwen3View
	}
	return sampled
}

func qwen3View(msgs []env.Message, i int) string {
	lastQuery := len(msgs) - 1
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == "user" {
			lastQuery = j
			break
		}
	}
	text := msgs[i].Content
	_, answer, thinks := strings.Cut(text, "</think>")
	switch {
	case i < lastQuery && thinks:
		return strings.TrimLeft(answer, "\n")
	case i == len(msgs)-1 && !thinks:
		return "<think>\n\n</think>\n\n" + text
	}
	return text
}

// episodeText is the episode's text through the first n turns, built as a trainer builds it:
// the prompt, each turn as view writes it, its end-of-turn text unless it was cut, and the
// delta of its reply. A turn without a reply ends the text.
func episodeText(t *testing.T, r Renderer, c renderCase, tools []json.RawMessage, n int, view turnView) string {
	t.Helper()
	msgs := c.messages(n)
	text, err := r.Prompt(c.Opening, tools)
	if err != nil {
		t.Fatal(err)
	}
	i := len(c.Opening)
	for _, turn := range c.Turns[:n] {
		text += view(msgs, i)
		if !turn.Truncated {
			text += r.EndOfTurn()
		}
		if turn.Reply == nil {
			break
		}
		delta, err := r.Delta(turn.Reply, tools, turn.Truncated)
		if err != nil {
			t.Fatal(err)
		}
		text += delta
		i += 1 + len(turn.Reply)
	}
	return text
}

// throughLastTurn cuts a rendering right after its last end-of-turn text.
func throughLastTurn(t *testing.T, text, endOfTurn string) string {
	t.Helper()
	end := strings.LastIndex(text, endOfTurn)
	if end < 0 {
		t.Fatalf("no %s in %q", endOfTurn, text)
	}
	return text[:end+len(endOfTurn)]
}

// TestChatRendererReproducesTemplate builds every golden conversation turn by turn (prompt,
// sampled turns, deltas) and compares it with Hugging Face's rendering from scratch after the
// opening, after every reply and at the end. Where they differ, the difference must be
// exactly the template rewriting earlier turns (templateView); the list of those places is
// fixed. Conversation must give Hugging Face's whole rendering.
func TestChatRendererReproducesTemplate(t *testing.T) {
	f := loadGoldens(t)
	var drifted []string
	for _, g := range f.goldens {
		c, r, tools := f.cases[g.Case], f.renderers[g.Template], f.tools(g)
		name := g.Template + "/" + g.Case
		if g.Tools {
			name += "/tools"
		}
		if len(g.Steps) != len(c.Turns) {
			t.Fatalf("%s: %d steps for %d turns", name, len(g.Steps), len(c.Turns))
		}
		for k, want := range g.Steps {
			if got := episodeText(t, r, c, tools, k, templateView(g.Template)); got != want {
				t.Errorf("%s: through reply %d:\n got %q\nwant %q", name, k, got, want)
			}
			if episodeText(t, r, c, tools, k, sampled) != want {
				drifted = append(drifted, name+"/"+strconv.Itoa(k))
			}
		}
		want := throughLastTurn(t, g.Full, r.EndOfTurn())
		n := len(c.Turns)
		if got := episodeText(t, r, c, tools, n, templateView(g.Template)); got != want {
			t.Errorf("%s: whole:\n got %q\nwant %q", name, got, want)
		}
		if episodeText(t, r, c, tools, n, sampled) != want {
			drifted = append(drifted, name+"/whole")
		}
		// A reply after the last turn, only logged, is no part of what is trained on.
		logged := append(c.messages(n), env.Message{Role: "user", Content: "Done."})
		for _, msgs := range [][]env.Message{c.messages(n), logged} {
			conv, err := r.Conversation(msgs, tools)
			if err != nil {
				t.Fatal(err)
			}
			if conv != want {
				t.Errorf("%s: Conversation of %d messages:\n got %q\nwant %q", name, len(msgs), conv, want)
			}
		}
	}
	wantDrift := []string{
		// Trailing white space of the last turn, trimmed by Llama's templates.
		"llama3.1/llama-tools/tools/whole", "llama3.1/llama-tools/whole",
		"llama3.2/llama-tools/tools/whole", "llama3.2/llama-tools/whole",
		// Qwen3's empty thinking block before a last turn without thinking.
		"qwen3/chat/whole", "qwen3/chat-no-system/whole",
		"qwen3/hermes-tools/tools/whole", "qwen3/hermes-tools/whole",
		"qwen3/hermes-no-system/tools/whole", "qwen3/hermes-no-system/whole",
		// Qwen3 dropping the thinking of turns once a user message follows.
		"qwen3/thinking/tools/2", "qwen3/thinking/tools/3", "qwen3/thinking/tools/4", "qwen3/thinking/tools/whole",
		"qwen3/thinking/2", "qwen3/thinking/3", "qwen3/thinking/4", "qwen3/thinking/whole",
	}
	slices.Sort(drifted)
	slices.Sort(wantDrift)
	if !slices.Equal(drifted, wantDrift) {
		t.Errorf("the episode differs from the template's rendering at\n%q\nwant\n%q", drifted, wantDrift)
	}
}

// TestDeltaIgnoresTools checks that the tools offered do not change a reply's delta, for the
// templates with tools: the goldens check each delta at several positions.
func TestDeltaIgnoresTools(t *testing.T) {
	f := loadGoldens(t)
	reply := []env.Message{{Role: "tool", Content: "12"}, {Role: "user", Content: "Thanks."}}
	for _, name := range []string{"llama3.1", "llama3.2", "qwen2.5", "qwen2.5-early", "qwen3"} {
		r := f.renderers[name]
		with, err := r.Delta(reply, f.cases["hermes-tools"].Tools, false)
		if err != nil {
			t.Fatal(err)
		}
		without, err := r.Delta(reply, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if with != without {
			t.Errorf("%s: delta with tools %q, without %q", name, with, without)
		}
	}
	want := "\n<|im_start|>user\n<tool_response>\n12\n</tool_response><|im_end|>\n<|im_start|>user\nThanks.<|im_end|>\n<|im_start|>assistant\n"
	if got, _ := f.renderers["qwen3"].Delta(reply, nil, false); got != want {
		t.Errorf("qwen3 delta %q, want %q", got, want)
	}
	want = "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"12\"<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nThanks.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if got, _ := f.renderers["llama3.1"].Delta(reply, nil, true); got != want {
		t.Errorf("llama3.1 delta after a cut turn %q, want %q", got, want)
	}
}

func TestChatRendererFamilies(t *testing.T) {
	f := loadGoldens(t)
	want := map[string][2]string{
		"llama3": {"<|eot_id|>", "hermes"}, "llama3.1": {"<|eot_id|>", "llama3_json"}, "llama3.2": {"<|eot_id|>", "llama3_json"},
		"qwen2": {"<|im_end|>", "hermes"}, "qwen2.5": {"<|im_end|>", "hermes"}, "qwen2.5-early": {"<|im_end|>", "hermes"}, "qwen3": {"<|im_end|>", "hermes"},
	}
	for name, r := range f.renderers {
		if got := [2]string{r.EndOfTurn(), string(r.ToolFormat())}; got != want[name] {
			t.Errorf("%s: end of turn and tool format %q, want %q", name, got, want[name])
		}
	}
}

// TestQwen3EpisodeTokens encodes an episode as a trainer holds it (the prompt, each sampled
// turn and its end-of-turn token, each delta, each encoded alone) and compares it with the
// encoding of Hugging Face's rendering from scratch, wherever the texts agree; where the
// template rewrote earlier turns the encodings must differ too.
func TestQwen3EpisodeTokens(t *testing.T) {
	f := loadGoldens(t)
	tok, err := hftok.Load(filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	r := f.renderers["qwen3"]
	eot, ok := tok.ID(r.EndOfTurn())
	if !ok {
		t.Fatalf("tokenizer has no %s", r.EndOfTurn())
	}
	agreed, differed := 0, 0
	for _, g := range f.goldens {
		if g.Template != "qwen3" {
			continue
		}
		c, tools := f.cases[g.Case], f.tools(g)
		texts := append(slices.Clone(g.Steps), throughLastTurn(t, g.Full, r.EndOfTurn()))
		for n, want := range texts {
			got := episodeTokens(t, tok, r, eot, c, tools, n)
			if episodeText(t, r, c, tools, n, sampled) == want {
				agreed++
				if !slices.Equal(got, tok.Encode(want)) {
					t.Errorf("%s/%s: through turn %d: the episode's tokens are not the rendering's", g.Case, map[bool]string{true: "tools"}[g.Tools], n)
				}
				continue
			}
			differed++
			if slices.Equal(got, tok.Encode(want)) {
				t.Errorf("%s: through turn %d: texts differ but tokens agree", g.Case, n)
			}
		}
	}
	if agreed != 27 || differed != 14 {
		t.Errorf("%d renderings agree with the episode and %d differ; want 27 and 14", agreed, differed)
	}
}

// episodeTokens is episodeText's episode as token ids, each piece encoded alone.
func episodeTokens(t *testing.T, tok *hftok.Tokenizer, r Renderer, eot int, c renderCase, tools []json.RawMessage, n int) []int {
	t.Helper()
	prompt, err := r.Prompt(c.Opening, tools)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(prompt)
	for _, turn := range c.Turns[:n] {
		ids = append(ids, tok.Encode(turn.Text)...)
		if !turn.Truncated {
			ids = append(ids, eot)
		}
		if turn.Reply == nil {
			break
		}
		delta, err := r.Delta(turn.Reply, tools, turn.Truncated)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.Encode(delta)...)
	}
	return ids
}

func TestPlainRenderer(t *testing.T) {
	r := NewPlainRenderer("<|endoftext|>")
	if r.EndOfTurn() != "<|endoftext|>" || r.ToolFormat() != toolcall.Hermes {
		t.Fatalf("end of turn %q, tool format %q", r.EndOfTurn(), r.ToolFormat())
	}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "calc"}}`)}
	opening := []env.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "Q: 2+2?\nA:"}}
	steps := []struct {
		got  func() (string, error)
		want string
	}{
		{func() (string, error) { return r.Prompt(opening[1:], tools) }, "Q: 2+2?\nA:"},
		{func() (string, error) { return r.Prompt(opening, tools) }, "Answer briefly.\nQ: 2+2?\nA:"},
		{func() (string, error) {
			return r.Delta([]env.Message{{Role: "tool", Content: "4"}, {Role: "user", Content: "Q: times 3?"}}, tools, false)
		}, "4\nQ: times 3?\n"},
		{func() (string, error) { return r.Delta([]env.Message{{Role: "user", Content: "Go on."}}, nil, true) }, "<|endoftext|>Go on.\n"},
		{func() (string, error) {
			return r.Conversation(append(slices.Clone(opening),
				env.Message{Role: "assistant", Content: " 4"},
				env.Message{Role: "user", Content: "Q: times 3?"},
				env.Message{Role: "assistant", Content: " 12"},
				env.Message{Role: "user", Content: "Right."}), tools)
		}, "Answer briefly.\nQ: 2+2?\nA: 4<|endoftext|>Q: times 3?\n 12<|endoftext|>"},
	}
	for i, s := range steps {
		got, err := s.got()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.want {
			t.Errorf("step %d: got %q, want %q", i, got, s.want)
		}
	}
}

// rewriting is a template that renders an environment's reply by rewriting the turn before it.
type rewriting struct{ hftok.Template }

func (r rewriting) Render(msgs []hftok.Message, o hftok.ChatOptions) (string, error) {
	text, err := r.Template.Render(msgs, o)
	if len(msgs) > 2 {
		text = strings.Replace(text, "assistant\n", "assistant\n\n", 1)
	}
	return text, err
}

// unnamed is a template whose family is unknown.
type unnamed struct{ hftok.Template }

func (unnamed) Name() string { return "chatml-custom" }

func TestRendererErrors(t *testing.T) {
	qwen3, err := hftok.TemplateNamed("qwen3", "")
	if err != nil {
		t.Fatal(err)
	}
	qwen2, _ := hftok.TemplateNamed("qwen2", "")
	llama31, _ := hftok.TemplateNamed("llama3.1", "<|begin_of_text|>")
	mustRenderer := func(tmpl hftok.Template) Renderer {
		r, err := NewChatRenderer(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	q3, q2, l31, plain := mustRenderer(qwen3), mustRenderer(qwen2), mustRenderer(llama31), NewPlainRenderer("<|endoftext|>")
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "calc"}}`)}
	user := []env.Message{{Role: "user", Content: "Hi."}}
	checks := []struct {
		name string
		err  error
		want string
	}{
		{"nil template", second(NewChatRenderer(nil)), "episode: no chat template"},
		{"unknown family", second(NewChatRenderer(unnamed{qwen3})), `chat template "chatml-custom": its end-of-turn token is not known`},
		{"not prefix-preserving", second(NewChatRenderer(rewriting{qwen3})), `the qwen3 template is not prefix-preserving: followed by the reply, the turn "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>" renders as`},
		{"prompt role", second(q3.Prompt([]env.Message{{Role: "robot", Content: "x"}}, nil)), `episode: prompt: message 0 has role "robot"; want system, user, assistant, tool`},
		{"plain prompt role", second(plain.Prompt([]env.Message{{Role: "", Content: "x"}}, nil)), `episode: prompt: message 0 has role ""; want system, user, assistant, tool`},
		{"no prompt", second(q3.Prompt(nil, nil)), "episode: prompt: no messages"},
		{"delta role", second(q3.Delta([]env.Message{{Role: "tool"}, {Role: "assistant"}}, nil, false)), `episode: delta: message 1 has role "assistant"; want tool, user`},
		{"plain delta role", second(plain.Delta([]env.Message{{Role: "system"}}, nil, false)), `episode: delta: message 0 has role "system"; want tool, user`},
		{"empty delta", second(q3.Delta(nil, nil, true)), "episode: delta: no messages"},
		{"tools refused", second(q2.Prompt(user, tools)), "episode: prompt: qwen2 template: qwen2's template has no tools"},
		{"tools refused in delta", second(q2.Delta(user, tools, false)), "episode: delta: qwen2 template: qwen2's template has no tools"},
		{"bad tool", second(q3.Prompt(user, []json.RawMessage{json.RawMessage(`{"name":`)})), `episode: prompt: tool 0 is not a JSON object: {"name":`},
		{"tool not an object", second(q3.Delta(user, []json.RawMessage{json.RawMessage(`["calc"]`)}, false)), `episode: delta: tool 0 is not a JSON object: ["calc"]`},
		{"tools without a user", second(l31.Prompt([]env.Message{{Role: "system", Content: "Be brief."}}, tools)), "episode: prompt: llama3.1 template: llama3.1 puts the tools in the first user message, and there is none"},
		{"no assistant", second(q3.Conversation(user, nil)), "episode: conversation: no assistant message"},
		{"plain no assistant", second(plain.Conversation(user, nil)), "episode: conversation: no assistant message"},
		{"conversation role", second(l31.Conversation([]env.Message{{Role: "user"}, {Role: "ipython"}}, nil)), `episode: conversation: message 1 has role "ipython"`},
	}
	for _, c := range checks {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
