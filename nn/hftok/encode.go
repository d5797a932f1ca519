package hftok

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Encode returns the token ids of text: added tokens written in it become their ids, the rest
// is normalised, split by the pre-tokenizer's regex and merged by BPE. Nothing is added
// around it (no BOS or EOS).
func (t *Tokenizer) Encode(text string) []int {
	var out []int
	for text != "" {
		i, a := t.nextAdded(text)
		out = append(out, t.encodePlain(text[:i])...)
		if a == nil {
			break
		}
		out = append(out, a.ID)
		text = text[i+len(a.Content):]
	}
	return out
}

// nextAdded finds the leftmost added token in text (the longest at that place).
func (t *Tokenizer) nextAdded(text string) (int, *addedToken) {
	best, at := -1, (*addedToken)(nil)
	for k := range t.added {
		a := &t.added[k]
		if i := strings.Index(text, a.Content); i >= 0 && (best < 0 || i < best) {
			best, at = i, a // added is longest first, so a tie keeps the longest
		}
	}
	if at == nil {
		return len(text), nil
	}
	return best, at
}

// encodePlain encodes text without added tokens.
func (t *Tokenizer) encodePlain(text string) []int {
	if text == "" {
		return nil
	}
	if t.nfc {
		text = norm.NFC.String(text)
	}
	var out []int
	runes := []rune(text)
	pos := 0
	m, _ := t.split.FindRunesMatch(runes)
	for m != nil {
		if m.RuneIndex > pos {
			out = append(out, t.bpe(string(runes[pos:m.RuneIndex]))...)
		}
		out = append(out, t.bpe(m.String())...)
		pos = m.RuneIndex + m.RuneLength
		m, _ = t.split.FindNextMatch(m)
	}
	if pos < len(runes) {
		out = append(out, t.bpe(string(runes[pos:]))...)
	}
	return out
}

// bpe encodes one piece: its bytes in the byte-level alphabet, merged pair by pair, the pair
// of lowest rank first (every occurrence of it at once, left to right); with ignore_merges a
// piece in the vocabulary is its own token.
func (t *Tokenizer) bpe(piece string) []int {
	if ids, ok := t.cache[piece]; ok {
		return ids
	}
	syms := make([]string, 0, len(piece))
	for i := 0; i < len(piece); i++ {
		syms = append(syms, string(byteToRune[piece[i]]))
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[strings.Join(syms, "")]; ok {
			return []int{id}
		}
	}
	for len(syms) > 1 {
		best, rank := -1, 0
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < rank) {
				best, rank = i, r
			}
		}
		if best < 0 {
			break
		}
		a, b := syms[best], syms[best+1]
		merged := syms[:0:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				merged = append(merged, a+b)
				i++
				continue
			}
			merged = append(merged, syms[i])
		}
		syms = merged
	}
	ids := make([]int, 0, len(syms))
	for _, s := range syms {
		if id, ok := t.vocab[s]; ok {
			ids = append(ids, id)
			continue
		}
		for _, r := range s { // a symbol missing from the vocabulary: its single bytes
			ids = append(ids, t.vocab[string(r)])
		}
	}
	if len(t.cache) < 1<<16 {
		t.cache[piece] = ids
	}
	return ids
}
