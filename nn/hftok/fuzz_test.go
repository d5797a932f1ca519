package hftok

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// FuzzLoad: any tokenizer.json is loaded or refused with an error naming the file, never a
// panic; a loaded one encodes and decodes text without one.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel"}}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {}, "merges": []}, "added_tokens": [{"id": 0, "content": "<s>", "special": true}]}`))
	f.Add([]byte(`{"normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		ids := tok.Encode("hello world <s> ab\n")
		if _, err := tok.Decode(ids); err != nil && !strings.Contains(err.Error(), "hftok") {
			t.Fatalf("decode error %q", err)
		}
	})
}

// FuzzRoundTrip: the Qwen3 tokenizer decodes what it encodes back to the text, normalised to
// NFC as its normalizer does.
func FuzzRoundTrip(f *testing.F) {
	tok, err := Load(filepath.Join(testutil.FixturesDir(f), "llama", "tokenizer"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello world", "  spaces\tand\nlines\r\n", "日本語 and émoji 🙂", "<|im_start|>user\nhi<|im_end|>", "x := y // ü\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		ids := tok.Encode(s)
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("decode of %q: %v", s, err)
		}
		if want := norm.NFC.String(s); got != want {
			t.Fatalf("round trip of %q gave %q", want, got)
		}
	})
}
