package episode

import (
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// TestForcedToolSyntax: over a byte tokenizer, exactly the bytes of a call's tags, braces,
// quotes, colons, commas, spaces and keys are forced; the tool's name, the arguments, the
// text around the call and the end-of-turn token are not.
func TestForcedToolSyntax(t *testing.T) {
	text := `ok <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>`
	tok := byteTok{}
	ep := &Episode{Tokens: append(tok.Encode(text), toyEOT)}
	ep.Turns = []Turn{{Start: 0, End: len(ep.Tokens)}}
	forced, err := ForcedToolSyntax(ep, toolcall.Hermes, func(ids []int32) ([]byte, error) {
		s, err := tok.Decode(ids)
		return []byte(s), err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i, f := range forced {
		if f {
			got = append(got, byte(ep.Tokens[i]))
		}
	}
	want := `<tool_call>{"name": "", "arguments": }</tool_call>`
	if string(got) != want {
		t.Errorf("forced bytes %q, want %q", got, want)
	}
	if forced[len(forced)-1] {
		t.Error("the end-of-turn token is forced")
	}
}

// TestWithin: a range is inside the union of spans only when no byte of it is outside.
func TestWithin(t *testing.T) {
	spans := []toolcall.Span{{Start: 2, End: 4}, {Start: 4, End: 6}, {Start: 8, End: 9}}
	var got []bool
	for _, r := range [][2]int{{2, 6}, {3, 5}, {1, 3}, {5, 7}, {8, 9}, {6, 8}, {4, 4}} {
		got = append(got, within(spans, r[0], r[1]))
	}
	if want := []bool{true, true, false, false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
