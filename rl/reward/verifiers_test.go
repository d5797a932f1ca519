package reward

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl"
)

func score(t *testing.T, r rl.Reward, completion string, meta rl.Meta) float64 {
	t.Helper()
	s, err := r.Score("prompt", completion, meta)
	if err != nil {
		t.Fatalf("%s(%q): %v", r.Name(), completion, err)
	}
	return s
}

func TestFinalNumber(t *testing.T) {
	for text, want := range map[string]float64{
		"Natalia sold 48/2 = 24 clips in May.\n#### 72": 72,
		"so the total is $1,234.50.":                    1234.5,
		"the answer is \\boxed{-7} (check: 3 - 10)":     -7,
		"#### 1,000,000":                                1e6,
		"It weighs 12kg, and 3 of them 36 kg":           36,
		"about .5 of it":                                0.5,
	} {
		got, ok := FinalNumber(text)
		if !ok || got != want {
			t.Errorf("FinalNumber(%q) = %v, %v; want %v", text, got, ok, want)
		}
	}
	if _, ok := FinalNumber("no digits here"); ok {
		t.Error("a text without digits has no number")
	}
}

func TestVerifiers(t *testing.T) {
	meta := rl.Meta{"answer": "Paris"}
	exact := Exact{Field: "answer"}
	for c, want := range map[string]float64{"  paris." + rl.EOSText: 1, "PARIS": 1, "Paris, France": 0} {
		if got := score(t, exact, c, meta); got != want {
			t.Errorf("exact(%q) = %v, want %v", c, got, want)
		}
	}
	num := Numeric{Field: "answer"}
	gsm := rl.Meta{"answer": "She has 3 + 4 = 7 apples.\n#### 7"}
	for c, want := range map[string]float64{"3 + 4 = 7" + rl.EOSText: 1, "#### 7.0": 1, "I think 8": 0, "no idea": 0} {
		if got := score(t, num, c, gsm); got != want {
			t.Errorf("numeric(%q) = %v, want %v", c, got, want)
		}
	}
	if _, err := num.Score("", "7", rl.Meta{}); err == nil || !strings.Contains(err.Error(), `"answer"`) {
		t.Errorf("numeric without an answer field: %v", err)
	}
	re, err := NewRegex(`answer is {answer}\b`, "answer")
	if err != nil {
		t.Fatal(err)
	}
	if score(t, re, "so the answer is 7.", rl.Meta{"answer": "7"}) != 1 || score(t, re, "so the answer is 70", rl.Meta{"answer": "7"}) != 0 {
		t.Error("regex with {answer} should match the answer as a word")
	}
	if _, err := NewRegex(`(`, "answer"); err == nil {
		t.Error("a bad pattern should be refused")
	}
	js := JSONFormat{Keys: []string{"name", "arguments"}}
	for c, want := range map[string]float64{
		`<tool_call>{"name": "f", "arguments": {}}</tool_call>` + rl.EOSText: 1,
		"```json\n{\"name\": \"f\", \"arguments\": 1}\n```":                  1,
		`{"name": "f"}`: 0,
		`not json`:      0,
	} {
		if got := score(t, js, c, nil); got != want {
			t.Errorf("format(%q) = %v, want %v", c, got, want)
		}
	}
	l := Length{Target: 4}
	for c, want := range map[string]float64{"abcd": 0, "abcdef": -0.5, "abcdefghijkl": -1, "åäöü" + rl.EOSText: 0} {
		if got := score(t, l, c, nil); got != want {
			t.Errorf("length(%q) = %v, want %v", c, got, want)
		}
	}
}

func TestParseSpec(t *testing.T) {
	ws, err := Parse("numeric:1, format:0.2,length", Options{JSONKeys: []string{"a"}, TargetLength: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 || ws[0].Reward.Name() != "numeric" || ws[1].Weight != 0.2 || ws[2].Weight != 1 {
		t.Fatalf("parsed %+v", ws)
	}
	for spec, want := range map[string]string{
		"exact:x":   `weight "x" of exact`,
		"exact:Inf": "not a finite number",
		"bleu":      `unknown reward "bleu"`,
		"regex":     "--reward-regex",
		"format":    "--format-regex or --format-json-keys",
		"length":    "--target-length",
	} {
		if _, err := Parse(spec, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error containing %q", spec, err, want)
		}
	}
}

// A verifier that compares with the answer refuses an empty one (which an empty completion
// would match) as it refuses a missing one; NeedsAnswer names those verifiers.
func TestFaultVerifierWithoutAnswer(t *testing.T) {
	re, err := NewRegex(`is {answer}`, "answer")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []rl.Reward{Exact{Field: "answer"}, Numeric{Field: "answer"}, re} {
		for _, meta := range []rl.Meta{{}, {"answer": ""}} {
			if _, err := r.Score("p", "", meta); err == nil || !strings.Contains(err.Error(), `"answer"`) {
				t.Errorf("%s with meta %v: %v, want an error naming the field", r.Name(), meta, err)
			}
		}
		if !NeedsAnswer(r) {
			t.Errorf("NeedsAnswer(%s) = false", r.Name())
		}
	}
	if err := (Numeric{}).CheckAnswer("about seven"); err == nil || !strings.Contains(err.Error(), "no number") {
		t.Errorf("numeric answer without a number: %v", err)
	}
	if err := (Numeric{}).CheckAnswer("#### 7"); err != nil {
		t.Error(err)
	}
	plain, err := NewRegex(`\d+`, "answer")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []rl.Reward{plain, Length{Target: 3}, JSONFormat{Keys: []string{"a"}}} {
		if NeedsAnswer(r) {
			t.Errorf("NeedsAnswer(%T) = true", r)
		}
	}
}
