package tasks

import (
	"testing"

	"github.com/tiktoken-go/tokenizer"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/objective"
)

func gpt2(t *testing.T) Encoder {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.R50kBase)
	if err != nil {
		t.Fatal(err)
	}
	return func(s string) ([]int, error) {
		ids, _, err := codec.Encode(s)
		out := make([]int, len(ids))
		for i, id := range ids {
			out[i] = int(id)
		}
		return out, err
	}
}

// With spaced digits every digit of the prompt and answer is its own GPT-2 token, the answer's
// tokens are exactly its digits, and they tokenise the same in context.
func TestAdditionTokenisesOneDigitPerToken(t *testing.T) {
	enc := gpt2(t)
	a := mustAddition(t, AdditionConfig{MinDigits: 1, MaxDigits: 5, Spaced: true})
	g, _ := NewGenerator(a, Train, 3)
	digit := map[int]bool{}
	for d := '0'; d <= '9'; d++ {
		ids, _ := enc(" " + string(d))
		if len(ids) != 1 {
			t.Fatalf("%q is %d tokens", " "+string(d), len(ids))
		}
		digit[ids[0]] = true
	}
	for i := 0; i < 300; i++ {
		p, _ := g.Next()
		pids, _ := enc(p.Text)
		ndig := 0
		for _, c := range p.Text {
			if c >= '0' && c <= '9' {
				ndig++
			}
		}
		// Digits, " +" and " =": one token each.
		if len(pids) != ndig+2 {
			t.Fatalf("%q: %d tokens for %d digits", p.Text, len(pids), ndig)
		}
		aids, _ := enc(p.Answer)
		if len(aids) != len(p.Format) {
			t.Fatalf("%q: %d tokens for %d digits", p.Answer, len(aids), len(p.Format))
		}
		for _, id := range aids {
			if !digit[id] {
				t.Fatalf("%q: token %d is not a single spaced digit", p.Answer, id)
			}
		}
		full, _ := enc(p.Text + p.Answer)
		if len(full) != len(pids)+len(aids) || full[len(pids)] != aids[0] {
			t.Fatalf("%q: prompt+answer does not tokenise as prompt then answer", p.Text+p.Answer)
		}
		tmpl, err := p.Template(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range tmpl {
			if id != rl.Unforced {
				t.Fatalf("%q: addition answers have no fixed tokens, template %v", p.Answer, tmpl)
			}
		}
	}
	// Unspaced, BPE merges digits: "12345" is fewer tokens than digits.
	ids, _ := enc("12345")
	if len(ids) >= 5 {
		t.Errorf("unspaced digits took %d tokens; the spacing rationale no longer holds", len(ids))
	}
}

// The copy task's end marker becomes a forced position in the template, and the template
// masks exactly that token when the policy follows the format.
func TestCopyTemplateForcesEndMarker(t *testing.T) {
	enc := gpt2(t)
	c, _ := NewCopy(DefaultCopyConfig())
	r := rng.New(1)
	dot, _ := enc(" .")
	if len(dot) != 1 {
		t.Fatalf("\" .\" is %d tokens", len(dot))
	}
	for i := 0; i < 100; i++ {
		p, err := c.Sample(r, Train)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := p.Template(enc)
		if err != nil {
			t.Fatal(err)
		}
		n := len(p.Meta["input"])
		if len(tmpl) != n+1 || tmpl[n] != dot[0] {
			t.Fatalf("%q: template %v", p.Answer, tmpl)
		}
		for _, id := range tmpl[:n] {
			if id != rl.Unforced {
				t.Fatalf("%q: letter position not free: %v", p.Answer, tmpl)
			}
		}
		ans, _ := enc(p.Answer)
		resp := append(ans, 50256)
		m, err := objective.BuildMasks([][]int{resp}, nil, 50256, objective.ForcedTemplate{tmpl})
		if err != nil {
			t.Fatal(err)
		}
		if m.ForcedTokens != 1 || m.Loss[0][n] != 0 || m.Loss[0][n+1] != 1 || m.Response[0][n+1] != 1 {
			t.Fatalf("%q: masks %+v", p.Answer, m)
		}
	}
	// A format whose pieces merge across boundaries is refused.
	if ids, _ := enc("123"); len(ids) != 1 {
		t.Fatalf("\"123\" is %d tokens, want 1 for this check", len(ids))
	}
	bad := Prompt{Text: "x", Format: []Piece{{Text: "1"}, {Text: "23", Fixed: true}}}
	if _, err := bad.Template(enc); err == nil {
		t.Error("merging pieces accepted")
	}
}

// The tokenizer decodes EOS to nothing it knows; rewards get rl.EOSText appended by
// rl.CompletionText instead, so a completion that stopped is distinguishable from one that
// ran out of room.
func TestCompletionTextMarksEOS(t *testing.T) {
	codec, err := tokenizer.Get(tokenizer.R50kBase)
	if err != nil {
		t.Fatal(err)
	}
	resp := []uint{}
	ids, _, _ := codec.Encode(" 3 5 7")
	resp = append(resp, ids...)
	text, err := codec.Decode(resp)
	if err != nil {
		t.Fatal(err)
	}
	a := mustAddition(t, DefaultAdditionConfig())
	p := a.Format(12, 345)
	if s, _ := a.Reward().Score(p.Text, rl.CompletionText(text, true), p.Meta); s != 1 {
		t.Errorf("stopped completion scored %v", s)
	}
	if s, _ := a.Reward().Score(p.Text, rl.CompletionText(text, false), p.Meta); s != 0 {
		t.Errorf("truncated completion scored %v", s)
	}
}
