package hftok

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"golang.org/x/text/unicode/norm"
)

// tokenizerDir is $VKGRAD_TOKENIZER_FIXTURES, else the shared fixtures' Qwen3 tokenizer.
func tokenizerDir(t *testing.T) string {
	if d := os.Getenv("VKGRAD_TOKENIZER_FIXTURES"); d != "" {
		return d
	}
	return filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer")
}

func readJSONL(t *testing.T, path string, each func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		each(sc.Bytes())
	}
}

// TestTokenizerGoldens: the ids Hugging Face tokenizers gives for varied texts, and their
// decoding back to the (NFC) text.
func TestTokenizerGoldens(t *testing.T) {
	dir := tokenizerDir(t)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	readJSONL(t, filepath.Join(dir, "cases.jsonl"), func(line []byte) {
		var c struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		n++
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("%q: ids %v, want %v", c.Text, got, c.IDs)
		}
		back, err := tok.Decode(c.IDs)
		if err != nil || back != norm.NFC.String(c.Text) {
			t.Errorf("%q: decodes to %q (%v)", c.Text, back, err)
		}
	})
	if n == 0 {
		t.Fatal("no cases")
	}
}

func TestChatToolGoldens(t *testing.T) { checkChat(t, "chat_tools.jsonl") }

// TestChatGoldens: conversations rendered as transformers' apply_chat_template renders the
// model's chat_template, and their ids.
func TestChatGoldens(t *testing.T) {
	checkChat(t, "chat.jsonl")
	if _, err := templateFor("{{ messages }}", ""); err == nil {
		t.Error("an unknown template should be refused")
	}
}

func checkChat(t *testing.T, name string) {
	dir := tokenizerDir(t)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := LoadTemplate(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	readJSONL(t, filepath.Join(dir, name), func(line []byte) {
		var c struct {
			Tools               []json.RawMessage `json:"tools"`
			Messages            []Message         `json:"messages"`
			AddGenerationPrompt bool              `json:"add_generation_prompt"`
			EnableThinking      *bool             `json:"enable_thinking"`
			Text                string            `json:"text"`
			IDs                 []int             `json:"ids"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		n++
		got, err := tmpl.Render(c.Messages, ChatOptions{AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking, Tools: c.Tools})
		if err != nil || got != c.Text {
			t.Errorf("conversation %d: rendered\n%q (%v)\nwant\n%q", n, got, err, c.Text)
			return
		}
		if ids := tok.Encode(got); !slices.Equal(ids, c.IDs) {
			t.Errorf("conversation %d: ids %v, want %v", n, ids, c.IDs)
		}
	})
	if n == 0 {
		t.Fatal("no conversations")
	}
}
