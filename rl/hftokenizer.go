package rl

import "github.com/vkgrad/vkgrad/nn/hftok"

// HFTokenizer gives a Hugging Face tokenizer (nn/hftok) the Tokenizer interface's int32 ids.
type HFTokenizer struct{ *hftok.Tokenizer }

// Encode returns text's token ids.
func (t HFTokenizer) Encode(text string) []int32 {
	ids := t.Tokenizer.Encode(text)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// Decode returns the text of ids.
func (t HFTokenizer) Decode(ids []int32) (string, error) {
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	return t.Tokenizer.Decode(in)
}

// DecodeBytes returns the bytes ids stand for, which for a byte-level tokenizer are the
// concatenation of each token's own (what episode.ForcedToolSyntax needs).
func (t HFTokenizer) DecodeBytes(ids []int32) ([]byte, error) {
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	return t.Tokenizer.DecodeBytes(in)
}
