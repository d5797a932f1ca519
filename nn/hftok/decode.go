package hftok

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeBytes returns the bytes of ids: added tokens as their content, the others from the
// byte-level alphabet.
func (t *Tokenizer) DecodeBytes(ids []int) ([]byte, error) {
	var out []byte
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) || t.pieces[id] == "" {
			return nil, fmt.Errorf("hftok: token id %d is not in the vocabulary of %d", id, len(t.pieces))
		}
		if t.isAdded(id) {
			out = append(out, t.pieces[id]...)
			continue
		}
		for _, r := range t.pieces[id] {
			b, ok := runeToByte[r]
			if !ok {
				return nil, fmt.Errorf("hftok: token %d (%q) holds %q, outside the byte-level alphabet", id, t.pieces[id], r)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// Decode is DecodeBytes as text; invalid UTF-8 (a split character) becomes U+FFFD, as Hugging
// Face's decoder does.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	b, err := t.DecodeBytes(ids)
	if err != nil {
		return "", err
	}
	if utf8.Valid(b) {
		return string(b), nil
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

func (t *Tokenizer) isAdded(id int) bool {
	for _, a := range t.added {
		if a.ID == id {
			return true
		}
	}
	return false
}
