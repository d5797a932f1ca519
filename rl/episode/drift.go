package episode

import (
	"fmt"
	"slices"
)

// markDrift sets Drift on each episode that wrote a turn and whose conversation, rendered from
// scratch and encoded, is not its own tokens (with the end-of-turn token a truncated last turn
// lacks).
func markDrift(eps []*Episode, tok Tokenizer, r Renderer, eot int32) error {
	for i, ep := range eps {
		if !ep.Trained() || len(ep.Turns) == 0 {
			continue
		}
		last := 0
		for k, m := range ep.Messages {
			if m.Role == "assistant" {
				last = k
			}
		}
		text, err := r.Conversation(slices.Clone(ep.Messages[:last+1]), ep.Tools)
		if err != nil {
			return fmt.Errorf("episode %d: rendering its conversation: %w", i, err)
		}
		got := slices.Concat(ep.Prompt, ep.Tokens)
		if ep.Turns[len(ep.Turns)-1].Truncated {
			got = append(got, eot)
		}
		ep.Drift = !slices.Equal(tok.Encode(text), got)
	}
	return nil
}
