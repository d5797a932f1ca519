package episode

import (
	"fmt"
	"slices"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// ForcedToolSyntax marks the sampled tokens of ep's turns that lie wholly inside the fixed
// parts of their tool calls (toolcall.SchemaSpans: tags, JSON punctuation, the envelope's
// keys), one flag per token of ep.Tokens. A token that straddles a fixed part and a choice of
// the model's (a tool's name, an argument) is not forced. pieces returns the bytes of ids,
// which for a byte-level tokenizer are the concatenation of each token's own.
func ForcedToolSyntax(ep *Episode, f toolcall.Format, pieces func(ids []int32) ([]byte, error)) ([]bool, error) {
	forced := make([]bool, len(ep.Tokens))
	for k, turn := range ep.Turns {
		body := ep.Tokens[turn.Start:turn.End]
		if !turn.Truncated {
			body = body[:len(body)-1]
		}
		offsets := make([]int, len(body)+1)
		var text []byte
		for i, id := range body {
			b, err := pieces([]int32{id})
			if err != nil {
				return nil, fmt.Errorf("turn %d: %w", k, err)
			}
			text = append(text, b...)
			offsets[i+1] = len(text)
		}
		spans, err := toolcall.SchemaSpans(f, string(text))
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", k, err)
		}
		for i := range body {
			forced[turn.Start+i] = within(spans, offsets[i], offsets[i+1])
		}
	}
	return forced, nil
}

// within reports whether the non-empty byte range [start, end) lies inside the union of
// spans (sorted, as SchemaSpans returns them).
func within(spans []toolcall.Span, start, end int) bool {
	if start >= end {
		return false
	}
	i, _ := slices.BinarySearchFunc(spans, start, func(s toolcall.Span, at int) int {
		if s.End <= at {
			return -1
		}
		return 1
	})
	for at := start; i < len(spans) && spans[i].Start <= at; i++ {
		at = spans[i].End
		if at >= end {
			return true
		}
	}
	return false
}
