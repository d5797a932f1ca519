package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// readEnvelope reads the call object text[start:end] (a valid JSON object) in format f. It
// returns the call and the byte ranges the model chose: the name between its quotes and the
// arguments value. Everything else in the object is fixed by the format. Members other than
// the name and the arguments make the call malformed.
func readEnvelope(f Format, text string, start, end int) (Call, []Span, error) {
	ms, ok := members(text, start, end)
	if !ok {
		return Call{}, nil, errors.New("not a JSON object")
	}
	var name, args *member
	var chosen []Span
	for i := range ms {
		m := &ms[i]
		switch {
		case m.key == "name":
			if name != nil {
				return Call{}, nil, errors.New(`"name" given twice`)
			}
			name = m
		case slices.Contains(f.argumentsKeys(), m.key):
			if args != nil {
				return Call{}, nil, fmt.Errorf("arguments given twice (%q and %q)", text[args.keyStart:args.keyEnd], text[m.keyStart:m.keyEnd])
			}
			args = m
			chosen = append(chosen, Span{m.valStart, m.valEnd})
		default:
			// Strict: a stray member (say "parameters" in a Hermes call) would be dropped
			// without a word, and the tool run with arguments the model did not mean.
			return Call{}, nil, fmt.Errorf("member %s is not part of a %s call", text[m.keyStart:m.keyEnd], f)
		}
	}
	if name == nil {
		return Call{}, nil, errors.New(`no "name"`)
	}
	var n string
	if err := json.Unmarshal([]byte(text[name.valStart:name.valEnd]), &n); err != nil || n == "" {
		return Call{}, nil, errors.New(`"name" is not a non-empty string`)
	}
	chosen = append(chosen, Span{name.valStart + 1, name.valEnd - 1})
	var raw json.RawMessage
	if args != nil {
		raw = json.RawMessage(text[args.valStart:args.valEnd])
	}
	a, err := decodeArguments(raw)
	if err != nil {
		return Call{}, nil, err
	}
	slices.SortFunc(chosen, func(x, y Span) int { return x.Start - y.Start })
	return Call{Name: n, Arguments: a}, chosen, nil
}
