package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// pyJSON writes raw JSON as Python's json.dumps(x, ensure_ascii=False) does, which chat
// templates' tojson is: keys in their given order, ", " and ": " between items, non-ASCII
// characters as they are.
func pyJSON(raw json.RawMessage) (string, error) { return pyJSONIndent(raw, 0) }

// pyJSONIndent is tojson(indent=n): with n > 0 every item on its own line, indented n spaces
// a level, items separated by "," alone, and empty containers still "{}" and "[]".
func pyJSONIndent(raw json.RawMessage, n int) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := pyValue(dec, &b, n, 0); err != nil {
		return "", fmt.Errorf("tojson: %w", err)
	}
	return b.String(), nil
}

func pyValue(dec *json.Decoder, b *strings.Builder, indent, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		closing := map[json.Delim]json.Delim{'{': '}', '[': ']'}[v]
		b.WriteRune(rune(v))
		sep, inner, outer := ", ", "", ""
		if indent > 0 {
			sep, inner, outer = ",", "\n"+strings.Repeat(" ", indent*(depth+1)), "\n"+strings.Repeat(" ", indent*depth)
		}
		i := 0
		for ; dec.More(); i++ {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(inner)
			if v == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				pyString(b, key.(string))
				b.WriteString(": ")
			}
			if err := pyValue(dec, b, indent, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		if i > 0 {
			b.WriteString(outer)
		}
		b.WriteRune(rune(closing))
	case string:
		pyString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[v])
	case nil:
		b.WriteString("null")
	}
	return nil
}

// pyString quotes s as json.dumps with ensure_ascii=False: only quotes, backslashes and
// control characters are escaped.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
