package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeDataset(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// chatML renders messages the way a ChatML template does, enough to see what was rendered.
func chatML(msgs []Message, _ []json.RawMessage) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	return b.String() + "<|im_start|>assistant\n", nil
}

func TestLoadDatasetTRLFields(t *testing.T) {
	path := writeDataset(t,
		`{"prompt": "What is 2+3?", "answer": "5", "difficulty": 2, "source": "gsm"}`,
		``,
		`{"prompt": [{"role": "user", "content": "Hi"}], "completion": "Hello"}`,
		`{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}`,
	)
	ps, err := LoadDataset(path, DatasetOptions{Chat: chatML})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d examples, want 3", len(ps))
	}
	if ps[0].Text != "What is 2+3?" || ps[0].Answer != "5" || ps[0].Meta["difficulty"] != "2" || ps[0].Meta["source"] != "gsm" || ps[0].Meta["answer"] != "5" {
		t.Errorf("text prompt: %+v", ps[0])
	}
	if ps[1].Text != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" || ps[1].Answer != "Hello" {
		t.Errorf("conversational prompt: %+v", ps[1])
	}
	if !strings.HasPrefix(ps[2].Text, "<|im_start|>system\nBe brief.") || strings.Contains(ps[2].Text, "4<|im_end|>") || ps[2].Answer != "4" {
		t.Errorf("messages: the last assistant turn should become the answer, got %+v", ps[2])
	}
}

func TestLoadDatasetFieldMapAndErrors(t *testing.T) {
	fields, err := ParseFieldMap("prompt=question, answer=final")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := LoadDataset(writeDataset(t, `{"question": "q1", "final": "a1", "prompt": "kept as metadata"}`), DatasetOptions{Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Text != "q1" || ps[0].Answer != "a1" || ps[0].Meta["prompt"] != "kept as metadata" {
		t.Errorf("mapped fields: %+v", ps[0])
	}
	if _, err := ParseFieldMap("question"); err == nil {
		t.Error("a mapping without = should be refused")
	}
	if _, err := ParseFieldMap("input=question"); err == nil || !strings.Contains(err.Error(), `"input"`) {
		t.Errorf("an unknown role: %v", err)
	}
	for body, want := range map[string]string{
		`{"answer": "x"}`:              `:1: no "prompt" or "messages" field`,
		`{"prompt": ""}`:               `field "prompt" is empty`,
		`{"prompt": "p", "answer": 5}`: `field "answer" is 5, want a string`,
		`not json`:                     ":1: not a JSON object",
		`{"messages": [{"role": "user", "content": "hi"}]}`: "no chat template",
		`{"prompt": [{"role": "robot", "content": "x"}]}`:   `role "robot"`,
	} {
		if _, err := LoadDataset(writeDataset(t, body), DatasetOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", body, err, want)
		}
	}
	if _, err := LoadDataset(writeDataset(t, ""), DatasetOptions{}); err == nil || !strings.Contains(err.Error(), "no examples") {
		t.Errorf("an empty file: %v", err)
	}
}

// The held-out share holds out exactly round(share × distinct prompts), at least one, with
// every row of each, the same ones however the file is ordered; a single distinct prompt is all
// training.
func TestSplitHeldOutCountsDistinctPrompts(t *testing.T) {
	rows := func(distinct, copies int) []Prompt {
		var ps []Prompt
		for c := range copies {
			for i := range distinct {
				ps = append(ps, Prompt{Text: fmt.Sprintf("question %d", i), Answer: fmt.Sprint(i, c)})
			}
		}
		return ps
	}
	for _, c := range []struct {
		distinct, copies int
		share            float64
		held             int // distinct prompts held out
	}{
		{40, 1, 0.05, 2}, {8, 1, 0.05, 1}, {2, 1, 0.05, 1}, {24, 1, 0.25, 6}, {1, 24, 0.25, 0},
		{6, 4, 0.25, 2}, {1, 1, 0.05, 0}, {400, 1, 0.1, 40}, {10, 1, 0, 0}, {3, 1, 0.5, 2},
	} {
		ps := rows(c.distinct, c.copies)
		train, held, err := SplitHeldOut(ps, c.share, 7)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		heldTexts := map[string]bool{}
		for _, p := range held {
			heldTexts[p.Text] = true
		}
		if len(heldTexts) != c.held || len(held) != c.held*c.copies || len(train)+len(held) != len(ps) {
			t.Errorf("%+v: %d distinct held out in %d rows, %d training rows", c, len(heldTexts), len(held), len(train))
		}
		for _, p := range train {
			if heldTexts[p.Text] {
				t.Errorf("%+v: %q is on both sides", c, p.Text)
			}
		}
		reversed := slices.Clone(ps)
		slices.Reverse(reversed)
		_, held2, _ := SplitHeldOut(reversed, c.share, 7)
		if len(held2) != len(held) {
			t.Errorf("%+v: reversed, %d rows held out, want %d", c, len(held2), len(held))
		}
		for i := range held2 {
			if held2[i].Text != held[i].Text {
				t.Errorf("%+v: reversed, held-out row %d is %q, want %q", c, i, held2[i].Text, held[i].Text)
				break
			}
		}
	}
	ps := rows(400, 1)
	_, a, _ := SplitHeldOut(ps, 0.1, 1)
	_, b, _ := SplitHeldOut(ps, 0.1, 2)
	if slices.EqualFunc(a, b, func(x, y Prompt) bool { return x.Text == y.Text }) {
		t.Error("the seed does not change which prompts are held out")
	}
	if _, _, err := SplitHeldOut(ps, 1, 1); err == nil {
		t.Error("share 1 leaves nothing to train on")
	}
	if _, _, err := SplitHeldOut(ps[:2], 0.9, 1); err == nil || !strings.Contains(err.Error(), "leaves none to train on") {
		t.Errorf("share 0.9 of 2: %v", err)
	}
}

// A byte order mark opening the file is skipped; bytes that are not UTF-8 are refused by line
// instead of becoming U+FFFD.
func TestFaultDatasetBOMAndInvalidUTF8(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bom.jsonl")
	if err := os.WriteFile(p, []byte("\xef\xbb\xbf{\"prompt\": \"p\", \"answer\": \"a\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadDataset(p, DatasetOptions{})
	if err != nil || len(ps) != 1 || ps[0].Text != "p" {
		t.Fatalf("a dataset opening with a byte order mark: %v %+v", err, ps)
	}
	bad := writeDataset(t, `{"prompt": "fine", "answer": "a"}`, "{\"prompt\": \"caf\xe9\", \"answer\": \"a\"}")
	if _, err := LoadDataset(bad, DatasetOptions{}); err == nil || !strings.Contains(err.Error(), bad+":2: not valid UTF-8 (byte 16)") {
		t.Errorf("invalid UTF-8 on line 2: %v", err)
	}
	if _, err := LoadJSONL(bad); err == nil || !strings.Contains(err.Error(), ":2: not valid UTF-8") {
		t.Errorf("LoadJSONL, invalid UTF-8 on line 2: %v", err)
	}
}

// With RequireAnswer a line with nothing to train or score on is refused by line; without it
// the prompt is kept and its metadata holds no answer (so a verifier that needs one says so).
func TestFaultDatasetWithoutAnswer(t *testing.T) {
	chat := DatasetOptions{Chat: chatML, RequireAnswer: true}
	for name, line := range map[string]string{
		"no answer field":        `{"prompt": "p"}`,
		"empty answer":           `{"prompt": "p", "answer": ""}`,
		"no assistant turn":      `{"messages": [{"role": "user", "content": "hi"}]}`,
		"assistant turn only":    `{"messages": [{"role": "assistant", "content": "hi"}]}`,
		"null answer":            `{"prompt": "p", "answer": null}`,
		"empty completion field": `{"prompt": "p", "completion": ""}`,
	} {
		path := writeDataset(t, `{"prompt": "ok", "answer": "a"}`, line)
		if _, err := LoadDataset(path, chat); err == nil || !strings.Contains(err.Error(), path+`:2: no answer to train or score on`) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ps, err := LoadDataset(writeDataset(t, `{"prompt": "p"}`, `{"prompt": "q", "answer": "a"}`), DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ps[0].Meta["answer"]; ok || ps[1].Meta["answer"] != "a" {
		t.Errorf("answer metadata: %v, %v", ps[0].Meta, ps[1].Meta)
	}
	if !strings.HasSuffix(ps[1].Where, "data.jsonl:2") {
		t.Errorf("second prompt comes from %q, want data.jsonl:2", ps[1].Where)
	}
}
