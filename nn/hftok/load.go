package hftok

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dlclark/regexp2/v2"

	"github.com/vkgrad/vkgrad/internal/modelfile"
)

// Tokenizer encodes text to token ids and back.
type Tokenizer struct {
	vocab   map[string]int
	pieces  []string // by id: the byte-level token string, or an added token's content
	ranks   map[[2]string]int
	split   *regexp2.Regexp
	nfc     bool
	added   []addedToken // longest first
	special map[int]bool
	cache   map[string][]int
	// ignoreMerges takes a piece found whole in the vocabulary as it is, before any merge
	// (Llama 3's tokenizer, after tiktoken): merging could end in other tokens.
	ignoreMerges bool
}

type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// file is the part of tokenizer.json this package reads.
type file struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
	} `json:"model"`
}

type component struct {
	Type          string      `json:"type"`
	Normalizers   []component `json:"normalizers"`
	Pretokenizers []component `json:"pretokenizers"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       bool   `json:"use_regex"`
}

// Load reads dir/tokenizer.json (or a tokenizer.json path). Tokenizers this package does not
// implement exactly are refused, naming the part.
func Load(path string) (*Tokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	b, err := modelfile.Read(path, modelfile.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	t, err := build(&f)
	if err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	return t, nil
}

func build(f *file) (*Tokenizer, error) {
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (want BPE)", f.Model.Type)
	}
	if f.Model.ByteFallback {
		return nil, fmt.Errorf("BPE with byte_fallback (SentencePiece style) is not supported")
	}
	t := &Tokenizer{vocab: f.Model.Vocab, ranks: map[[2]string]int{}, special: map[int]bool{}, cache: map[string][]int{}, ignoreMerges: f.Model.IgnoreMerges}
	if err := t.readMerges(f.Model.Merges); err != nil {
		return nil, err
	}
	if err := t.readNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := t.readPreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	size := 0
	for _, id := range t.vocab {
		size = max(size, id+1)
	}
	for _, a := range f.AddedTokens {
		size = max(size, a.ID+1)
	}
	t.pieces = make([]string, size)
	for s, id := range t.vocab {
		t.pieces[id] = s
	}
	for _, a := range f.AddedTokens {
		t.pieces[a.ID] = a.Content
		t.added = append(t.added, a)
		if a.Special {
			t.special[a.ID] = true
		}
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].Content) > len(t.added[j].Content) })
	return t, nil
}

// readMerges accepts both spellings: "a b" strings and [a, b] pairs.
func (t *Tokenizer) readMerges(raw json.RawMessage) error {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		var lines []string
		if err := json.Unmarshal(raw, &lines); err != nil {
			return fmt.Errorf("model.merges: want [a, b] pairs or \"a b\" strings: %v", err)
		}
		for i, l := range lines {
			a, b, ok := strings.Cut(l, " ")
			if !ok {
				return fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, l)
			}
			pairs = append(pairs, [2]string{a, b})
		}
	}
	for i, p := range pairs {
		if _, dup := t.ranks[p]; !dup {
			t.ranks[p] = i
		}
	}
	return nil
}

func (t *Tokenizer) readNormalizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("normalizer: %v", err)
	}
	switch {
	case c.Type == "NFC":
		t.nfc = true
	case c.Type == "Sequence" && len(c.Normalizers) == 0:
	case c.Type == "Sequence" && len(c.Normalizers) == 1 && c.Normalizers[0].Type == "NFC":
		t.nfc = true
	default:
		return fmt.Errorf("normalizer %s is not supported (want NFC or none)", raw)
	}
	return nil
}

// readPreTokenizer accepts what byte-level BPE models use: a Split by regex (isolated) and a
// ByteLevel step without its own regex, alone or in a Sequence.
func (t *Tokenizer) readPreTokenizer(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("pre_tokenizer: %v", err)
	}
	steps := []component{c}
	if c.Type == "Sequence" {
		steps = c.Pretokenizers
	}
	byteLevel := false
	for _, s := range steps {
		switch s.Type {
		case "Split":
			if s.Pattern.Regex == nil || s.Behavior != "Isolated" || s.Invert {
				return fmt.Errorf("pre_tokenizer Split with pattern %+v, behavior %q, invert %v is not supported (want an isolated regex)", s.Pattern, s.Behavior, s.Invert)
			}
			re, err := regexp2.Compile(*s.Pattern.Regex, regexp2.Unicode)
			if err != nil {
				return fmt.Errorf("pre_tokenizer Split regex: %v", err)
			}
			t.split = re
		case "ByteLevel":
			if s.AddPrefixSpace || s.UseRegex {
				return fmt.Errorf("pre_tokenizer ByteLevel with add_prefix_space or use_regex is not supported")
			}
			byteLevel = true
		default:
			return fmt.Errorf("pre_tokenizer %q is not supported (want Split and ByteLevel)", s.Type)
		}
	}
	if !byteLevel || t.split == nil {
		return fmt.Errorf("pre_tokenizer %s: want a Split regex and ByteLevel", raw)
	}
	return nil
}

func checkDecoder(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil || c.Type != "ByteLevel" {
		return fmt.Errorf("decoder %s is not supported (want ByteLevel)", raw)
	}
	return nil
}

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// ID returns the id of a token string (a special token's content, say).
func (t *Tokenizer) ID(token string) (int, bool) {
	for _, a := range t.added {
		if a.Content == token {
			return a.ID, true
		}
	}
	id, ok := t.vocab[token]
	return id, ok
}
