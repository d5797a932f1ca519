package toolcall

// Span is the byte range [Start, End) of a turn's text.
type Span struct {
	Start, End int
}

// SchemaSpans returns the byte ranges of text that the format fixed in its calls that parse,
// in order, each within one call: the tags (`<tool_call>`, `</tool_call>`, `<|python_tag|>`), the
// call object's braces, quotes, colons, commas and white space, and its keys "name" and
// "arguments" ("parameters" for Llama31). The model's choices are left out: the tool's name
// (between its quotes) and the whole arguments value.
// Malformed calls have no spans: every token of them is the model's doing.
func SchemaSpans(f Format, text string) ([]Span, error) {
	fs, err := scan(f, text)
	if err != nil {
		return nil, err
	}
	var out []Span
	for _, x := range fs {
		if !x.call.Malformed() {
			out = append(out, fixedSpans(x)...)
		}
	}
	return out, nil
}

// fixedSpans returns the gaps between the model's choices in one call that parsed.
func fixedSpans(x found) []Span {
	var out []Span
	p := x.call.Start
	for _, c := range x.chosen {
		if p < c.Start {
			out = append(out, Span{p, c.Start})
		}
		p = c.End
	}
	if p < x.call.End {
		out = append(out, Span{p, x.call.End})
	}
	return out
}
