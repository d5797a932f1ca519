package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// FromRanks is the tokenizer.json of a byte-level BPE tokenizer given as tiktoken gives one:
// pieces[id] holds the bytes of each token, its id being its merge rank (the 256 single bytes
// among them); special names the added special tokens by id (their pieces are ignored); split
// is the pre-tokenizer's regex. Each token's merge is recovered from the ranks: the pair that
// byte-pair encoding of its bytes, with only the merges of lower rank, ends in.
func FromRanks(pieces [][]byte, special map[int]string, split string) ([]byte, error) {
	rank := map[string]int{}
	for id, p := range pieces {
		if _, ok := special[id]; !ok && len(p) > 0 {
			rank[string(p)] = id
		}
	}
	for b := range 256 {
		if _, ok := rank[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("hftok: byte 0x%02x has no token of its own", b)
		}
	}
	vocab := map[string]int{}
	var merges [][2]string
	for id, p := range pieces {
		if _, ok := special[id]; ok || len(p) == 0 {
			continue
		}
		vocab[byteLevel(p)] = id
		if len(p) == 1 {
			continue
		}
		a, b, err := mergeOf(p, id, rank)
		if err != nil {
			return nil, err
		}
		merges = append(merges, [2]string{byteLevel(a), byteLevel(b)})
	}
	return encodeFile(vocab, merges, special, split)
}

// mergeOf is the pair of tokens that BPE with the merges ranked below rank leaves p as.
func mergeOf(p []byte, id int, rank map[string]int) ([]byte, []byte, error) {
	parts := make([][]byte, len(p))
	for i := range p {
		parts[i] = p[i : i+1]
	}
	for {
		best, bestRank := -1, id
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := rank[string(p[offset(parts, i):offset(parts, i+2)])]; ok && r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		start := offset(parts, best)
		parts[best] = p[start : start+len(parts[best])+len(parts[best+1])]
		parts = slices.Delete(parts, best+1, best+2)
	}
	if len(parts) != 2 {
		return nil, nil, fmt.Errorf("hftok: token %d %q is not the merge of two tokens of lower rank", id, p)
	}
	return parts[0], parts[1], nil
}

// offset is where parts[i] starts in the bytes parts cover.
func offset(parts [][]byte, i int) int {
	n := 0
	for _, q := range parts[:i] {
		n += len(q)
	}
	return n
}

// byteLevel is b in the byte-level alphabet tokenizer.json spells tokens in.
func byteLevel(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = byteToRune[c]
	}
	return string(r)
}

// encodeFile writes the parts of tokenizer.json Load reads, as Hugging Face tokenizers lays
// out a byte-level BPE tokenizer split by a regex (Qwen2's layout).
func encodeFile(vocab map[string]int, merges [][2]string, special map[int]string, split string) ([]byte, error) {
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	for _, id := range slices.Sorted(maps.Keys(special)) {
		addedTokens = append(addedTokens, added{ID: id, Content: special[id], Special: true})
		vocab[special[id]] = id
	}
	byteLevelStep := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	f := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": addedTokens,
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": split}, "behavior": "Isolated", "invert": false},
			byteLevelStep,
		}},
		"post_processor": byteLevelStep,
		"decoder":        byteLevelStep,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": merges,
		},
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	return out.Bytes(), nil
}
