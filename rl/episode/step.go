package episode

import (
	"context"
	"fmt"
	"sync"

	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// step feeds each listed slot its queued tokens in one decoder step, draws each one's next
// token and ends the turns that are over.
func (run *runner) step(rows []int) error {
	toks := make([][]int32, len(rows))
	for k, s := range rows {
		st := run.states[run.slot[s]]
		toks[k] = st.feed
		if len(st.feed) == 1 && len(st.ep.Tokens) > st.turnStart {
			run.stats.Decoded++
		} else {
			run.stats.PrefillTokens += len(st.feed)
		}
	}
	logits, err := run.d.StepRagged(rows, toks)
	if err != nil {
		return err
	}
	run.stats.Steps++
	run.stats.SlotSteps += len(run.slot)
	picks, err := run.pick(rows, logits)
	if err != nil {
		return err
	}
	for k, s := range rows {
		if err := run.record(s, picks[k]); err != nil {
			return fmt.Errorf("episode %d: %w", run.slot[s], err)
		}
	}
	return nil
}

// pick draws each row's next token from its logits with its episode's stream: the uniforms
// in row order, the draws in parallel.
func (run *runner) pick(rows []int, logits []float32) ([]sample.Pick, error) {
	stride := len(logits) / len(rows)
	V := run.d.VocabSize()
	us := make([]float64, len(rows))
	for k, s := range rows {
		i := run.slot[s]
		row := logits[k*stride : (k+1)*stride]
		if err := sample.CheckLogits(row, V); err != nil {
			return nil, fmt.Errorf("episode %d, token %d: %w", i, len(run.states[i].ep.Tokens)+1, err)
		}
		if g := run.tasks[i].RNG; g != nil {
			us[k] = g.Float64()
		}
	}
	picks := make([]sample.Pick, len(rows))
	workers := min(len(run.pickers), len(rows))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := w; k < len(rows); k += workers {
				picks[k] = run.pickers[w].Pick(logits[k*stride:(k+1)*stride], V, us[k])
			}
		})
	}
	wg.Wait()
	return picks, nil
}

// record appends a drawn token to its episode and, when the turn is over (its end-of-turn
// token, its token cap, a full context or the episode's timeout), sends the turn to the
// environment.
func (run *runner) record(s int, p sample.Pick) error {
	st := run.states[run.slot[s]]
	ep := st.ep
	ep.appendToken(p.Token, true, p)
	st.feed = []int32{p.Token}
	ended := p.Token == run.cfg.EndOfTurn
	st.full = len(ep.Prompt)+len(ep.Tokens) >= run.budget
	capped := len(ep.Tokens)-st.turnStart >= run.cfg.MaxNewTokens
	if !ended && !st.full && !capped && !run.timedOut(st) {
		return nil
	}
	st.feed, st.last = nil, p.Token
	body := ep.Tokens[st.turnStart:]
	if ended {
		body = body[:len(body)-1]
	}
	text, err := run.tok.Decode(body)
	if err != nil {
		return fmt.Errorf("decoding turn %d: %w", len(ep.Turns), err)
	}
	calls, malformed, err := toolcall.Parse(run.r.ToolFormat(), text)
	if err != nil {
		return err
	}
	ep.Turns = append(ep.Turns, Turn{Start: st.turnStart, End: len(ep.Tokens), Text: text, Truncated: !ended,
		ToolCalls: len(calls), Malformed: malformed})
	ep.Messages = append(ep.Messages, env.Message{Role: "assistant", Content: text})
	if run.timedOut(st) {
		run.stop(s, st, StopEpisodeTimeout, nil)
		return nil
	}
	turn := env.Turn{Index: len(ep.Turns) - 1, Text: text, Truncated: !ended, ToolCalls: calls}
	e := st.env
	st.call = run.start(func(ctx context.Context, c *call) { c.step, c.err = e.Step(ctx, turn) })
	st.rejoin = run.now + run.cfg.RejoinSteps
	return nil
}

// appendToken adds a token after the prompt: a drawn one with its pick, or one of the
// environment's.
func (e *Episode) appendToken(id int32, sampled bool, p sample.Pick) {
	e.Tokens = append(e.Tokens, id)
	e.Sampled = append(e.Sampled, sampled)
	e.LogProb = append(e.LogProb, float32(p.LogProb))
	e.Trunc = append(e.Trunc, float32(p.TruncLogProb))
	e.Kept = append(e.Kept, int32(p.Kept))
	e.Cutoff = append(e.Cutoff, p.Cutoff)
}
