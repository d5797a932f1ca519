// Package tokenizer is GPT-2's tokenizer: byte-level BPE over the r50k_base vocabulary.
//
// [GPT2] returns the shared [Tokenizer]. The <|endoftext|> token [EOT] is handled explicitly:
// [Tokenizer.Encode] treats the marker [EOTText] as plain text, so untrusted text cannot inject
// a document boundary; [Tokenizer.EncodeSpecial] turns it into EOT; and [Tokenizer.Decode]
// renders EOT back as the marker. A [Decoder] turns a stream of tokens into text without
// splitting a character across tokens.
package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	tk "github.com/tiktoken-go/tokenizer"
)

const (
	// EOT is GPT-2's <|endoftext|> token, also used as the document separator and padding.
	EOT int32 = 50256
	// EOTText is how EOT is written in text.
	EOTText = "<|endoftext|>"
	// Name identifies the encoding, e.g. in cache keys.
	Name = "r50k_base"

	vocabSize = 50257
)

// Tokenizer encodes and decodes GPT-2 tokens. It is safe for concurrent use.
type Tokenizer struct {
	codec  tk.Codec
	pieces [][]byte // token id -> bytes; EOT maps to EOTText
}

var (
	gpt2Once sync.Once
	gpt2     *Tokenizer
	gpt2Err  error
)

// GPT2 returns the shared GPT-2 tokenizer, building it on first use.
func GPT2() (*Tokenizer, error) {
	gpt2Once.Do(func() { gpt2, gpt2Err = newGPT2() })
	return gpt2, gpt2Err
}

func newGPT2() (*Tokenizer, error) {
	c, err := tk.Get(tk.R50kBase)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: loading %s: %w", Name, err)
	}
	c.SetErrorMode(tk.ErrorModeNone) // keep raw bytes: pieces can hold part of a character
	t := &Tokenizer{codec: c, pieces: make([][]byte, vocabSize)}
	one := []uint{0}
	for id := range vocabSize - 1 {
		one[0] = uint(id)
		s, err := c.Decode(one)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s has no token %d: %w", Name, id, err)
		}
		t.pieces[id] = []byte(s)
	}
	t.pieces[EOT] = []byte(EOTText)
	return t, nil
}

// VocabSize is the number of token ids, 50257 (EOT is the last).
func (t *Tokenizer) VocabSize() int { return vocabSize }

// EOT returns the end-of-text token id.
func (t *Tokenizer) EOT() int32 { return EOT }

// Encode tokenizes text as ordinary text: "<|endoftext|>" in the input becomes the tokens of
// those characters, never EOT, so untrusted text cannot inject a document boundary. Text is
// split as Unicode, so each byte of invalid UTF-8 is encoded as U+FFFD.
func (t *Tokenizer) Encode(text string) []int32 {
	if text == "" {
		return nil
	}
	// The BPE library drops U+007F (DEL), which GPT-2 encodes as a token of its own; DEL
	// starts no merge, so it is its own piece and the text around it is encoded apart.
	if i := strings.IndexByte(text, delByte); i >= 0 {
		out := append(t.Encode(text[:i]), delToken)
		return append(out, t.Encode(text[i+1:])...)
	}
	// With ErrorModeNone the codec only fails if the split pattern times out, which it never
	// does without a timeout set.
	ids, _, err := t.codec.Encode(text)
	if err != nil {
		panic(fmt.Sprintf("tokenizer: encoding failed: %v", err))
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// delByte is DEL, and delToken the GPT-2 token whose single byte it is.
const (
	delByte  = 0x7f
	delToken = 221
)

// EncodeSpecial is Encode, except that each "<|endoftext|>" in text becomes the EOT token.
func (t *Tokenizer) EncodeSpecial(text string) []int32 {
	var out []int32
	for {
		i := strings.Index(text, EOTText)
		if i < 0 {
			return append(out, t.Encode(text)...)
		}
		out = append(out, t.Encode(text[:i])...)
		out = append(out, EOT)
		text = text[i+len(EOTText):]
	}
}

// DecodeBytes returns the bytes the tokens stand for. A token can hold part of a multi-byte
// character, so the result of a prefix of a sequence may end in an incomplete UTF-8 sequence;
// see Decoder for streaming.
func (t *Tokenizer) DecodeBytes(ids []int32) ([]byte, error) {
	return t.AppendBytes(nil, ids)
}

// AppendBytes appends the bytes of ids to dst.
func (t *Tokenizer) AppendBytes(dst []byte, ids []int32) ([]byte, error) {
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) {
			return dst, fmt.Errorf("tokenizer: token id %d at position %d is outside the vocabulary (0..%d)", id, i, len(t.pieces)-1)
		}
		dst = append(dst, t.pieces[id]...)
	}
	return dst, nil
}

// Decode returns the text of ids; bytes that do not form valid UTF-8 are kept as they are.
// It fails, naming the first bad id and its position, when an id is outside the vocabulary.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	b, err := t.DecodeBytes(ids)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Piece returns the bytes of one token.
func (t *Tokenizer) Piece(id int32) ([]byte, error) {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil, fmt.Errorf("tokenizer: token id %d is outside the vocabulary (0..%d)", id, len(t.pieces)-1)
	}
	return t.pieces[id], nil
}

// Decoder turns a stream of tokens into text, holding back the bytes of a character split
// across tokens until it is complete, so printed samples never show broken characters.
type Decoder struct {
	t       *Tokenizer
	pending []byte
}

// NewDecoder returns a streaming decoder.
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Add appends one token and returns the text that is now complete.
func (d *Decoder) Add(id int32) (string, error) {
	p, err := d.t.Piece(id)
	if err != nil {
		return "", err
	}
	d.pending = append(d.pending, p...)
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out, nil
}

// Flush returns whatever is held back, complete or not, and empties the decoder.
func (d *Decoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix is the length of b without a trailing incomplete (but so far valid) UTF-8
// sequence. Invalid bytes are not held back: no later byte could complete them.
func completePrefix(b []byte) int {
	// A UTF-8 sequence is at most 4 bytes, so only the last 3 bytes can start an incomplete one.
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return len(b) // ASCII: nothing pending
		}
		if c >= 0xC0 { // a lead byte
			tail := b[len(b)-back:]
			if !utf8.FullRune(tail) {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}
