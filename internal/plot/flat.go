package plot

import (
	"bytes"
	"encoding/json"
)

// field is one name and raw JSON value of a metrics line.
type field struct{ key, val []byte }

// fields appends the fields of line, a JSON object, to dst; ok is false when line is not one.
// Metrics lines are flat objects of plain names and numbers, which a direct scan reads several
// times faster than encoding/json; anything else (escapes, nesting, a repeated name, a doubt)
// goes to encoding/json, whose verdict stands.
func fields(line []byte, dst []field) ([]field, bool) {
	if fs, ok := scanFlat(line, dst); ok {
		return fs, true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil || obj == nil {
		return dst[:0], false
	}
	fs := dst[:0]
	for k, v := range obj {
		fs = append(fs, field{[]byte(k), v})
	}
	return fs, true
}

// scanFlat reads line as an object whose values are numbers, escape-free strings, true, false
// or null, and whose names are escape-free and distinct; ok is false for anything else.
func scanFlat(line []byte, dst []field) (fs []field, ok bool) {
	fs = dst[:0]
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return fs, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return fs, skipSpace(line, i+1) == len(line)
	}
	for {
		key, j, ok := plainString(line, i)
		if !ok {
			return fs, false
		}
		for _, f := range fs {
			if bytes.Equal(f.key, key) {
				return fs, false
			}
		}
		i = skipSpace(line, j)
		if i == len(line) || line[i] != ':' {
			return fs, false
		}
		i = skipSpace(line, i+1)
		end, ok := scalarEnd(line, i)
		if !ok {
			return fs, false
		}
		fs = append(fs, field{key, line[i:end]})
		i = skipSpace(line, end)
		if i == len(line) {
			return fs, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return fs, skipSpace(line, i+1) == len(line)
		default:
			return fs, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainString reads a string at b[i] holding no escape or control character and returns its
// contents and the index after its closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false // escapes and UTF-8 checks are encoding/json's
		}
	}
	return nil, 0, false
}

// scalarEnd returns the end of the number, plain string, true, false or null at b[i].
func scalarEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		_, end, ok := plainString(b, i)
		return end, ok
	case 't', 'f', 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(b[i:], []byte(lit)) {
				return i + len(lit), true
			}
		}
		return 0, false
	}
	return numberEnd(b, i)
}

// numberEnd returns the end of the JSON number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}
