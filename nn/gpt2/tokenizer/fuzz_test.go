package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// FuzzRoundTrip: valid UTF-8 text decodes back to itself; any ids decode or fail, never panic.
func FuzzRoundTrip(f *testing.F) {
	tk, err := GPT2()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello world", "a\x7fb", "naïve café 日本語", "  \n\t x", "<|endoftext|>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			got, err := tk.Decode(tk.Encode(s))
			if err != nil || got != s {
				t.Fatalf("%q decodes back to %q (%v)", s, got, err)
			}
		}
		ids := make([]int32, 0, len(s)/2)
		for i := 0; i+1 < len(s); i += 2 {
			ids = append(ids, int32(s[i])<<8|int32(s[i+1])-1000)
		}
		tk.DecodeBytes(ids) // ids outside the vocabulary are an error, not a panic
	})
}
