package hf

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/hftok"
)

// gpt2Split is GPT-2's pre-tokenizer regex (r50k_base's, as tiktoken and Hugging Face apply it).
const gpt2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// GPT2Tokenizer is GPT-2's tokenizer as a Hugging Face tokenizer.json: the 50,257 ids of
// nn/gpt2/tokenizer, <|endoftext|> the one special token, for a directory whose model uses GPT-2's
// tokenizer (a Llama-family preset's, say) to be read with its text.
func GPT2Tokenizer() ([]byte, error) {
	tok, err := tokenizer.GPT2()
	if err != nil {
		return nil, err
	}
	pieces := make([][]byte, tok.VocabSize())
	for id := range pieces {
		if int32(id) == tokenizer.EOT {
			continue
		}
		if pieces[id], err = tok.Piece(int32(id)); err != nil {
			return nil, fmt.Errorf("hf: GPT-2 tokenizer: %w", err)
		}
	}
	return hftok.FromRanks(pieces, map[int]string{int(tokenizer.EOT): tokenizer.EOTText}, gpt2Split)
}
