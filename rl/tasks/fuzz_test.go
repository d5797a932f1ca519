package tasks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzLoadDataset: any JSON Lines or JSON array file gives prompts with text, or an error naming a line.
func FuzzLoadDataset(f *testing.F) {
	f.Add([]byte(`{"prompt": "2+2=", "answer": "4", "x": 1}` + "\n" + `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`))
	f.Add([]byte(`{"question": "q", "final": "a"}`))
	f.Add([]byte("\xef\xbb\xbf{\"question\": \"q\", \"answer\": \"a\"}\n"))
	f.Add([]byte("{\"question\": \"q\"}\n{\"question\": \"caf\xe9\"}\n"))
	f.Add([]byte("\xef\xbb\xbf\n\xef\xbb\xbf{\"question\": \"q\"}"))
	f.Add([]byte("[\n {\"question\": \"q\", \"answer\": \"a\"},\n {\"question\": null, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n]"))
	f.Add([]byte("\xef\xbb\xbf[{\"question\": \"q\"}] trailing"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "d.jsonl")
		os.WriteFile(path, b, 0o644)
		chat := func(m []Message, _ []json.RawMessage) (string, error) { return m[0].Content + "|", nil }
		ps, err := LoadDataset(path, DatasetOptions{Chat: chat, Fields: map[string]string{"prompt": "question"}})
		if err != nil {
			return
		}
		if !utf8.Valid(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))) {
			t.Fatalf("invalid UTF-8 accepted: %q", b)
		}
		for i, p := range ps {
			if p.Text == "" || p.Meta["answer"] != p.Answer || p.Where == "" {
				t.Fatalf("prompt %d: %+v", i, p)
			}
		}
	})
}
