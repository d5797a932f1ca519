package data

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/hftok"
)

// qwenEncoder gives the Qwen3 tokenizer int32 ids.
type qwenEncoder struct{ t *hftok.Tokenizer }

func (q qwenEncoder) Encode(s string) []int32 {
	var out []int32
	for _, id := range q.t.Encode(s) {
		out = append(out, int32(id))
	}
	return out
}

// Cutting a document at lone newlines (splitSafe) gives the Qwen3 tokenizer's ids for the whole
// document too, so a Hugging Face tokenizer's corpus is tokenised in parallel chunks safely.
func TestChunkedEncodingMatchesWholeForQwen(t *testing.T) {
	tok, err := hftok.Load(filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := range 300 {
		sb.WriteString("func f" + strings.Repeat("é", i%3) + "() {\n\treturn 42 // 你好 world\n}\n\n  x := y\nend\r\nz" + strings.Repeat(" ", i%4) + "\n")
	}
	doc := sb.String()
	enc := qwenEncoder{tok}
	pieces := splitSafe(doc, 200)
	if len(pieces) < 10 {
		t.Fatalf("only %d pieces", len(pieces))
	}
	var chunked []int32
	for _, p := range pieces {
		chunked = append(chunked, enc.Encode(p)...)
	}
	if whole := enc.Encode(doc); !slices.Equal(chunked, whole) {
		t.Fatalf("chunked encoding differs from the whole document's (%d and %d ids)", len(chunked), len(whole))
	}
}
