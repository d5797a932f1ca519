package hftok

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestIgnoreMerges: with ignore_merges a word in the vocabulary is one token even where the
// merges cannot build it; without, the merges decide. Here "abc" is in the vocabulary but the
// only merge makes "bc", so merging gives "a" "bc". Hugging Face's tokenizers.js
// (@huggingface/tokenizers 0.2.0) encodes this tokenizer.json to the same ids.
func TestIgnoreMerges(t *testing.T) {
	for _, tc := range []struct {
		ignore bool
		want   []int
	}{{true, []int{5}}, {false, []int{0, 4}}} {
		tj := map[string]any{
			"added_tokens": []any{},
			"normalizer":   nil,
			"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\w+|\s+`}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
			}},
			"decoder": map[string]any{"type": "ByteLevel"},
			"model": map[string]any{
				"type": "BPE", "ignore_merges": tc.ignore, "byte_fallback": false,
				"vocab":  map[string]int{"a": 0, "b": 1, "c": 2, "Ġ": 3, "bc": 4, "abc": 5},
				"merges": []string{"b c"},
			},
		}
		b, err := json.Marshal(tj)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode("abc"); !slices.Equal(got, tc.want) {
			t.Errorf("ignore_merges %v: abc encodes to %v, want %v", tc.ignore, got, tc.want)
		}
		if got := tok.Encode("cab"); !slices.Equal(got, []int{2, 0, 1}) {
			t.Errorf("ignore_merges %v: cab encodes to %v, want [2 0 1]", tc.ignore, got)
		}
	}
}
