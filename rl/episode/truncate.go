package episode

import (
	"slices"

	"github.com/vkgrad/vkgrad/rl/env"
)

// capToolOutputs cuts each tool message longer than MaxToolOutputTokens down to that many
// tokens, as ToolOutputTruncate says; the others are kept as they are.
func (run *runner) capToolOutputs(msgs []env.Message) []env.Message {
	n := run.cfg.MaxToolOutputTokens
	if n == 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	for i, m := range out {
		if m.Role != "tool" {
			continue
		}
		ids := run.tok.Encode(m.Content)
		if len(ids) <= n {
			continue
		}
		kept := cut(ids, n, run.cfg.ToolOutputTruncate)
		if text, err := run.tok.Decode(kept); err == nil {
			out[i].Content = text
		}
	}
	return out
}

// cut keeps n of ids: the last n ("left" cuts the left), the first n ("right"), or the first
// and last halves ("middle").
func cut(ids []int32, n int, mode string) []int32 {
	switch mode {
	case "left":
		return ids[len(ids)-n:]
	case "right":
		return ids[:n]
	}
	head := (n + 1) / 2
	return append(slices.Clone(ids[:head]), ids[len(ids)-(n-head):]...)
}
