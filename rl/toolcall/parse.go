package toolcall

import (
	"strings"
)

const (
	openTag   = "<tool_call>"
	closeTag  = "</tool_call>"
	pythonTag = "<|python_tag|>"
	thinkOpen = "<think>"
	thinkEnd  = "</think>"
)

// found is one call found in a turn, with the byte ranges the model chose in it (nil when the
// call did not parse).
type found struct {
	call   Call
	chosen []Span
}

// Parse returns the tool calls in an assistant turn's decoded text (end-of-turn token
// removed), in order, and how many of them did not parse.
//
// Only the text after the last `</think>` is read, and none from a `<think>` that is never
// closed. Hermes: every `<tool_call>` starts a call; a JSON object with a non-empty string
// "name", an "arguments" object (or a string holding one, or none or null: {}) and no other
// member, closed by `</tool_call>`, parses. Anything else is a malformed call
// that runs to the next `</tool_call>` or `<tool_call>`, or to the end of the text.
// Llama31: a turn that starts with `<|python_tag|>` or `{` is one call, whose JSON object with
// "name" and "parameters" (or "arguments") must be the whole rest of the turn; any other turn
// has no calls.
func Parse(f Format, text string) (calls []Call, malformed int, err error) {
	fs, err := scan(f, text)
	if err != nil {
		return nil, 0, err
	}
	for _, x := range fs {
		calls = append(calls, x.call)
		if x.call.Malformed() {
			malformed++
		}
	}
	return calls, malformed, nil
}

// scan finds the calls of text in format f.
func scan(f Format, text string) ([]found, error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	lo, hi := readable(text)
	if f == Llama31 {
		return scanLlama(text[:hi], lo), nil
	}
	return scanHermes(text[:hi], lo), nil
}

// readable returns the part of text outside thinking: after the last `</think>`, and before
// a `<think>` that follows it, which was never closed.
func readable(text string) (lo, hi int) {
	if i := strings.LastIndex(text, thinkEnd); i >= 0 {
		lo = i + len(thinkEnd)
	}
	hi = len(text)
	if i := strings.Index(text[lo:], thinkOpen); i >= 0 {
		hi = lo + i
	}
	return lo, hi
}

// scanHermes finds every `<tool_call>` of s from offset p on.
func scanHermes(s string, p int) []found {
	var out []found
	for {
		i := strings.Index(s[p:], openTag)
		if i < 0 {
			return out
		}
		var x found
		x, p = hermesCall(s, p+i)
		out = append(out, x)
	}
}

// hermesCall reads the call whose `<tool_call>` is at s[open:] and returns it and the offset
// after it.
func hermesCall(s string, open int) (found, int) {
	body := open + len(openTag)
	j := skipSpace(s, body)
	from := body // where a malformed call looks for the tag that ends it
	if end, ok := readObject(s, j); ok {
		from = end
		if k := skipSpace(s, end); strings.HasPrefix(s[k:], closeTag) {
			next := k + len(closeTag)
			c, chosen, err := readEnvelope(Hermes, s, j, end)
			if err != nil {
				return found{call: Call{Raw: strings.TrimSpace(s[body:k]), Start: open, End: next}}, next
			}
			c.Start, c.End = open, next
			return found{call: c, chosen: chosen}, next
		}
	}
	stop, next := len(s), len(s)
	if i := strings.Index(s[from:], closeTag); i >= 0 {
		stop, next = from+i, from+i+len(closeTag)
	}
	if i := strings.Index(s[from:], openTag); i >= 0 && from+i < stop {
		stop, next = from+i, from+i
	}
	return found{call: Call{Raw: strings.TrimSpace(s[body:stop]), Start: open, End: next}}, next
}

// scanLlama reads s[p:] as a Llama 3.1 turn: one whole-turn call or none.
func scanLlama(s string, p int) []found {
	start := skipSpace(s, p)
	body := start
	if strings.HasPrefix(s[start:], pythonTag) {
		body = start + len(pythonTag)
	} else if start >= len(s) || s[start] != '{' {
		return nil
	}
	last := len(strings.TrimRight(s, " \t\r\n"))
	j := skipSpace(s, body)
	if end, ok := readObject(s, j); ok && end == last {
		if c, chosen, err := readEnvelope(Llama31, s, j, end); err == nil {
			c.Start, c.End = start, end
			return []found{{call: c, chosen: chosen}}
		}
	}
	return []found{{call: Call{Raw: strings.TrimSpace(s[body:]), Start: start, End: max(last, body)}}}
}
