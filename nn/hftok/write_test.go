package hftok

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// byteRanks are the 256 single bytes as ids 0..255, then extra.
func byteRanks(extra ...string) [][]byte {
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, e := range extra {
		pieces = append(pieces, []byte(e))
	}
	return pieces
}

func TestFromRanksRecoversTheMerges(t *testing.T) {
	pieces := append(byteRanks("ab", "abc", "bc", "abcd", " x"), nil)
	raw, err := FromRanks(pieces, map[int]string{len(pieces) - 1: "<|end|>"}, `\s?\w+|\s+|.`)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(p, raw, 0o644)
	tok, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	// "abcd": ab (256), then abc (257) before bc (258) could form, then abcd (259).
	if got := tok.Encode("abcd x<|end|>bc"); !slices.Equal(got, []int{259, 260, 261, 258}) {
		t.Errorf("encoded %v", got)
	}
	if !strings.Contains(string(raw), `["ab","c"]`) || strings.Contains(string(raw), `["a","bc"]`) {
		t.Errorf("merges of abc: %s", raw)
	}
}

func TestFaultFromRanksRefusesTokensNoMergeMakes(t *testing.T) {
	if _, err := FromRanks(byteRanks("abc"), nil, `.`); err == nil || !strings.Contains(err.Error(), `"abc" is not the merge`) {
		t.Errorf("a three-byte token without its two-byte part: %v", err)
	}
	if _, err := FromRanks(byteRanks()[1:], nil, `.`); err == nil || !strings.Contains(err.Error(), "byte 0x00") {
		t.Errorf("a missing byte: %v", err)
	}
}
