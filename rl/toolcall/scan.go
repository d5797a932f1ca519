package toolcall

import (
	"encoding/json"
	"strings"
)

// readObject decodes the JSON value that starts at text[i]. ok reports a valid object; end is
// the offset just after it.
func readObject(text string, i int) (end int, ok bool) {
	if i >= len(text) || text[i] != '{' {
		return 0, false
	}
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return 0, false
	}
	return i + int(dec.InputOffset()), true
}

// member is one key and value of a JSON object, as byte ranges of the text.
type member struct {
	key              string // decoded
	keyStart, keyEnd int
	valStart, valEnd int
}

// members lists the members of the valid JSON object text[start:end], in order.
func members(text string, start, end int) ([]member, bool) {
	var out []member
	p := skipSpace(text, start+1)
	if p < end && text[p] == '}' {
		return nil, true
	}
	for p < end {
		var m member
		m.keyStart, m.keyEnd = p, stringEnd(text, p)
		if m.keyEnd < 0 || json.Unmarshal([]byte(text[m.keyStart:m.keyEnd]), &m.key) != nil {
			return nil, false
		}
		p = skipSpace(text, m.keyEnd)
		if p >= end || text[p] != ':' {
			return nil, false
		}
		m.valStart = skipSpace(text, p+1)
		m.valEnd = valueEnd(text, m.valStart)
		if m.valEnd < 0 || m.valEnd > end {
			return nil, false
		}
		out = append(out, m)
		p = skipSpace(text, m.valEnd)
		if p < end && text[p] == ',' {
			p = skipSpace(text, p+1)
			continue
		}
		return out, p == end-1 && text[p] == '}'
	}
	return nil, false
}

// skipSpace returns the first offset at or after i that is not JSON white space.
func skipSpace(text string, i int) int {
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringEnd returns the offset after the JSON string that starts at text[i], or -1.
func stringEnd(text string, i int) int {
	if i >= len(text) || text[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the offset after the JSON value that starts at text[i], or -1. The value
// must already be known valid; this only finds where it ends.
func valueEnd(text string, i int) int {
	if i >= len(text) {
		return -1
	}
	switch text[i] {
	case '"':
		return stringEnd(text, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(text); j++ {
			switch text[j] {
			case '"':
				e := stringEnd(text, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // number, true, false or null
	for j < len(text) && !isSpace(text[j]) && strings.IndexByte(",}]", text[j]) < 0 {
		j++
	}
	return j
}
