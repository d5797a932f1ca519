package hf

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
)

// GPT-2's tokenizer written as tokenizer.json reads back (hftok) to the same ids and text.
func TestGPT2TokenizerJSONEncodesAsGPT2(t *testing.T) {
	raw, err := GPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	hft, err := hftok.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	gpt2, _ := tokenizer.GPT2()
	if hft.VocabSize() != gpt2.VocabSize() {
		t.Fatalf("vocabulary %d, want %d", hft.VocabSize(), gpt2.VocabSize())
	}
	texts := []string{
		"Hello, world! It's a test of GPT-2's tokenizer.",
		"func main() {\n\tfmt.Println(\"héllo wörld\")   // ünïcode 日本語 😀\n}\n\n\n",
		"  leading spaces, 12345 numbers, 3.14159, don't, we'll, I'd've, CAPS and MiXeD",
		strings.Repeat("=", 70) + " ----- " + strings.Repeat("a", 40),
		"Ἀθῆναι, Москва, القاهرة, देवनागरी, 한국어\r\n\ttabs\u00a0nbsp",
	}
	if src, err := os.ReadFile("hf.go"); err == nil {
		texts = append(texts, string(src))
	}
	for _, text := range texts {
		want := gpt2.Encode(text)
		got := hft.Encode(text)
		got32 := make([]int32, 0, len(got))
		for _, id := range got {
			got32 = append(got32, int32(id))
		}
		if !slices.Equal(got32, want) {
			t.Errorf("%.40q: tokenizer.json gives %v, GPT-2 %v", text, got32[:min(20, len(got32))], want[:min(20, len(want))])
		}
		if back, err := hft.Decode(got); err != nil || back != text {
			t.Errorf("%.40q decodes to %.40q (%v)", text, back, err)
		}
	}
	if id, ok := hft.ID(tokenizer.EOTText); !ok || id != int(tokenizer.EOT) {
		t.Errorf("%s is id %d (%v), want %d", tokenizer.EOTText, id, ok, tokenizer.EOT)
	}
}
