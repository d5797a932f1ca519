package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// Environment is what multi-turn episodes need beside the policy: the environments, the chat
// template's renderer, and a tokenizer for the template's text.
type Environment struct {
	// New makes one episode's environment.
	New env.Factory
	// Render writes prompts and the environment's replies in the model's text.
	Render episode.Renderer
	// Tok encodes the renderer's text, special tokens included, and decodes turns.
	Tok episode.Tokenizer
	// Pieces returns the bytes of token ids; TrainConfig.MaskToolSyntax needs it.
	Pieces func(ids []int32) ([]byte, error)
}

// check names what the environment lacks for cfg.
func (e *Environment) check(cfg TrainConfig) error {
	switch {
	case cfg.Episodes == nil:
		return fmt.Errorf("an environment needs episodes (TrainConfig.Episodes) to run in")
	case e.New == nil || e.Render == nil || e.Tok == nil:
		return fmt.Errorf("environment: want a factory, a renderer and a tokenizer")
	case cfg.MaskToolSyntax && e.Pieces == nil:
		return fmt.Errorf("mask_tool_syntax: the environment has no token pieces to place the tool syntax")
	}
	return nil
}

// SetEnvironment makes each rollout row a multi-turn episode in e (cfg.Episodes says how).
func (t *GRPOTrainer) SetEnvironment(e Environment) error { return t.setEnvironment(e) }

// SetEnvironment makes each rollout row a multi-turn episode in e (cfg.Episodes says how).
func (t *PPOTrainer) SetEnvironment(e Environment) error { return t.setEnvironment(e) }

func (c *rolloutTrainer) setEnvironment(e Environment) error {
	if err := e.check(c.cfg); err != nil {
		return err
	}
	c.env = &e
	return nil
}

// EnvReturnKey is the metadata key that carries an episode's return to the rewards (the
// reward term "env" reads it), exact as strconv's shortest form.
const EnvReturnKey = "env_return"

// EnvMessagesKey is the metadata key that carries an episode's whole conversation (a JSON
// list of messages) to the rewards, for a reward program that judges the conversation.
const EnvMessagesKey = "env_messages"

// EnvReward is the reward term "env": an episode's return, the sum of its environment's turn
// rewards.
type EnvReward struct{}

// Name implements Reward.
func (EnvReward) Name() string { return "env" }

// Score implements Reward.
func (EnvReward) Score(_, _ string, meta Meta) (float64, error) {
	s, ok := meta[EnvReturnKey]
	if !ok {
		return 0, fmt.Errorf("the reward \"env\" scores episodes, and this row ran none (no environment?)")
	}
	return strconv.ParseFloat(s, 64)
}

// episodeTasks makes the episodes of rows (groups of per rows): each group's samples face
// the task seeded by (run seed, step, group) and draw from streams keyed by their place, so
// nothing depends on the ranks or the batching.
func episodeTasks(rows []Prompt, per int, seed uint64, step int, greedy bool) []episode.Task {
	tasks := make([]episode.Task, len(rows))
	for i, p := range rows {
		g, k := i/per, i%per
		msgs := p.Messages
		if msgs == nil && p.Text != "" { // a text prompt; none at all: the environment's reset opens
			msgs = []env.Message{{Role: "user", Content: p.Text}}
		}
		example := p.Example
		if example == nil { // a generated prompt: the environment gets null
			example = json.RawMessage("null")
		}
		tasks[i] = episode.Task{Messages: msgs, Tools: p.Tools, Example: example, Sample: k,
			Seed: rng.Keyed(seed, uint64(step), uint64(g)).Uint64() >> 11} // below 2^53, exact in JSON
		if !greedy {
			tasks[i].RNG = rng.Keyed(seed, uint64(step), uint64(g), uint64(k), 1)
		}
	}
	return tasks
}

// runEpisodes runs the tasks on m: all together on slots decoder rows (0: one per task), or
// when spread, this rank's groups of per tasks one group at a time (so every rank decodes the
// same batches whatever the number of ranks), shared by gather (nil: one process).
func runEpisodes(m nn.LM, e *Environment, cfg episode.Config, tasks []episode.Task, slots, per int, spread bool, rank, size int, gather func([]byte) ([][]byte, error)) ([]*episode.Episode, episode.Stats, error) {
	if !spread {
		return runEpisodesOn(m, e, cfg, tasks, slots)
	}
	first, n := mpi.Held(rank, len(tasks)/per, size)
	var mine []*episode.Episode
	var stats episode.Stats
	for g := first; g < first+n; g++ {
		eps, st, err := runEpisodesOn(m, e, cfg, tasks[g*per:(g+1)*per], slots)
		if err != nil {
			return nil, stats, err
		}
		mine = append(mine, eps...)
		stats = stats.Add(st)
	}
	if gather == nil {
		return mine, stats, nil
	}
	all, err := shareEpisodes(gather, mine)
	return all, stats, err
}

// drawEpisodes runs a step's episodes (rows in groups of per) and scores them.
func (c *rolloutTrainer) drawEpisodes(rows []Prompt, per int) (*Rollout, *RewardBatch, error) {
	tasks := episodeTasks(rows, per, c.cfg.Seed, c.step, false)
	rank, size := c.rankSize()
	var gather func([]byte) ([][]byte, error)
	if c.comm != nil {
		gather = c.gather
	}
	done := c.timed(PhaseRollout)
	eps, stats, err := runEpisodes(c.policy, c.env, c.cfg.episodeConfig(false), tasks, c.cfg.Rollout.GenBatch, per, c.cfg.Spread, rank, size, gather)
	done()
	if err != nil {
		return nil, nil, fmt.Errorf("episodes: %w", err)
	}
	if err := checkFailures(eps); err != nil {
		return nil, nil, fmt.Errorf("step %d: %w", c.step+1, err)
	}
	var forced func(i int) ([]bool, error)
	if c.cfg.MaskToolSyntax {
		forced = func(i int) ([]bool, error) {
			return episode.ForcedToolSyntax(eps[i], c.env.Render.ToolFormat(), c.env.Pieces)
		}
	}
	ro, err := episodeRollout(rows, eps, c.cfg.Rollout.EOS, forced)
	if err != nil {
		return nil, nil, err
	}
	ro.episodeStats = stats
	metas, err := episodeMetas(rows, eps)
	if err != nil {
		return nil, nil, err
	}
	rb, err := c.score(ro, metas, per)
	if err != nil {
		return nil, nil, err
	}
	for _, ep := range eps {
		c.numTokens += int64(len(ep.Prompt) + len(ep.Tokens))
	}
	return ro, rb, nil
}

// RunEpisodes runs an episode in e for each row on m, without training: each row faces the
// task its place and seed pick, sampled as cfg says (Temperature 0: greedily), slots rows
// decoded together (0: all). Episodes are returned in row order.
func RunEpisodes(m nn.LM, e *Environment, cfg episode.Config, rows []Prompt, seed uint64, slots int) ([]*episode.Episode, error) {
	greedy := cfg.Sampling.Temperature == 0
	eps, _, err := runEpisodesOn(m, e, cfg, episodeTasks(rows, 1, seed, 0, greedy), slots)
	return eps, err
}

// runEpisodesOn runs the tasks together on a decoder of slots rows (0: one per task).
func runEpisodesOn(m nn.LM, e *Environment, cfg episode.Config, tasks []episode.Task, slots int) ([]*episode.Episode, episode.Stats, error) {
	if slots <= 0 || slots > len(tasks) {
		slots = len(tasks)
	}
	limit := min(m.MaxSeqLen(), cfg.MaxEpisodeTokens)
	dec, err := m.NewDecoder(slots, limit)
	if err != nil {
		return nil, episode.Stats{}, fmt.Errorf("%w; gen_batch (--gen-batch) caps the episodes decoded together", err)
	}
	defer dec.Close()
	d, ok := dec.(sample.RowDecoder)
	if !ok {
		return nil, episode.Stats{}, fmt.Errorf("episodes: the policy's decoder cannot decode rows at their own positions")
	}
	return episode.Run(d, e.Tok, e.Render, e.New, tasks, cfg)
}

// shareEpisodes returns every rank's episodes, in rank order (which is group order), carried
// exactly as wireEpisodes.
func shareEpisodes(gather func([]byte) ([][]byte, error), mine []*episode.Episode) ([]*episode.Episode, error) {
	buf, err := json.Marshal(toWire(mine))
	if err != nil {
		return nil, fmt.Errorf("sharing the episodes: %w", err)
	}
	parts, err := gather(buf)
	if err != nil {
		return nil, fmt.Errorf("sharing the episodes: %w", err)
	}
	var all []*episode.Episode
	for r, p := range parts {
		var eps []wireEpisode
		if err := json.Unmarshal(p, &eps); err != nil {
			return nil, fmt.Errorf("the episodes rank %d sent: %w", r, err)
		}
		all = append(all, fromWire(eps)...)
	}
	return all, nil
}

// wireEpisode is an episode as JSON carries it between ranks: the sampler's float32 records
// travel as their bits, since JSON has no infinity for sample.NoCutoff; the other numbers
// print in their shortest exact form.
type wireEpisode struct {
	*episode.Episode
	LogProb, Trunc, Cutoff []uint32
}

func toWire(eps []*episode.Episode) []wireEpisode {
	bits := func(xs []float32) []uint32 {
		out := make([]uint32, len(xs))
		for i, x := range xs {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	out := make([]wireEpisode, len(eps))
	for i, ep := range eps {
		out[i] = wireEpisode{Episode: ep, LogProb: bits(ep.LogProb), Trunc: bits(ep.Trunc), Cutoff: bits(ep.Cutoff)}
	}
	return out
}

func fromWire(w []wireEpisode) []*episode.Episode {
	floats := func(bs []uint32) []float32 {
		out := make([]float32, len(bs))
		for i, b := range bs {
			out[i] = math.Float32frombits(b)
		}
		return out
	}
	out := make([]*episode.Episode, len(w))
	for i, we := range w {
		ep := we.Episode
		if ep == nil {
			ep = &episode.Episode{}
		}
		ep.LogProb, ep.Trunc, ep.Cutoff = floats(we.LogProb), floats(we.Trunc), floats(we.Cutoff)
		out[i] = ep
	}
	return out
}

// checkFailures stops the run when more than half of a batch's episodes failed in their
// environment: a broken environment, not bad luck.
func checkFailures(eps []*episode.Episode) error {
	failed, first := 0, ""
	for _, ep := range eps {
		if ep.StopReason == episode.StopEnvError {
			if failed == 0 {
				first = ep.Error
			}
			failed++
		}
	}
	if 2*failed > len(eps) {
		return fmt.Errorf("%d of %d episodes failed in their environment; the first: %s", failed, len(eps), first)
	}
	return nil
}

// episodeRollout lays episodes out as a rollout: each episode's tokens after its prompt are
// the row's completion, the loss on its sampled tokens only (less the forced ones, when
// forced is set), and the rewards see its last turn. An episode that failed trains nothing.
func episodeRollout(prompts []Prompt, eps []*episode.Episode, eos int, forced func(i int) ([]bool, error)) (*Rollout, error) {
	n := len(eps)
	ro := &Rollout{Prompts: prompts, PromptIDs: make([][]int32, n), GenLens: make([]int, n), Episodes: eps, Texts: make([]string, n)}
	W := 1
	for _, ep := range eps {
		W = max(W, len(ep.Tokens))
	}
	ro.Completions, ro.Kept, ro.Cutoff = make([][]int, n), make([][]int, n), make([][]float32, n)
	ro.SampleLogp, ro.SampleTrunc = objective.Zeros(n, W), objective.Zeros(n, W)
	m := &objective.Masks{Response: objective.Zeros(n, W), Loss: objective.Zeros(n, W), Truncated: make([]bool, n), Lengths: make([]int, n)}
	for i, ep := range eps {
		ro.PromptIDs[i] = ep.Prompt
		if len(ep.Prompt) == 0 { // the environment failed before the prompt: a placeholder row
			ro.PromptIDs[i] = []int32{int32(eos)}
		}
		ro.GenLens[i], m.Lengths[i] = max(1, len(ep.Tokens)), max(1, len(ep.Tokens))
		ro.Completions[i], ro.Kept[i], ro.Cutoff[i] = make([]int, W), make([]int, W), make([]float32, W)
		var f []bool
		if forced != nil && ep.Trained() {
			var err error
			if f, err = forced(i); err != nil {
				return nil, fmt.Errorf("episode %d: %w", i, err)
			}
		}
		for t := range W {
			ro.Completions[i][t], ro.Cutoff[i][t] = eos, sample.NoCutoff
			if t >= len(ep.Tokens) {
				continue
			}
			ro.Completions[i][t] = int(ep.Tokens[t])
			ro.SampleLogp[i][t], ro.SampleTrunc[i][t] = float64(ep.LogProb[t]), float64(ep.Trunc[t])
			ro.Kept[i][t], ro.Cutoff[i][t] = int(ep.Kept[t]), ep.Cutoff[t]
			if ep.Sampled[t] && ep.Trained() {
				m.Response[i][t] = 1
				if f != nil && f[t] {
					m.ForcedTokens++
				} else {
					m.Loss[i][t] = 1
				}
			}
		}
		ended := len(ep.Turns) > 0 && !ep.Turns[len(ep.Turns)-1].Truncated
		m.Truncated[i] = !ended
		ro.Texts[i] = CompletionText(ep.LastText(), ended)
	}
	ro.Masks = m
	return ro, nil
}

// episodeMetas adds each episode's return and conversation to its prompt's metadata, for the
// rewards.
func episodeMetas(rows []Prompt, eps []*episode.Episode) ([]Meta, error) {
	metas := make([]Meta, len(rows))
	for i, p := range rows {
		m := make(Meta, len(p.Meta)+2)
		for k, v := range p.Meta {
			m[k] = v
		}
		m[EnvReturnKey] = strconv.FormatFloat(eps[i].Return, 'g', -1, 64)
		msgs, err := json.Marshal(eps[i].Messages)
		if err != nil {
			return nil, fmt.Errorf("episode %d: %w", i, err)
		}
		m[EnvMessagesKey] = string(msgs)
		metas[i] = m
	}
	return metas, nil
}

// countedRows lists the rows whose episodes count in group statistics: all but the failed.
func countedRows(ro *Rollout) []bool {
	if ro.Episodes == nil {
		return nil
	}
	out := make([]bool, len(ro.Episodes))
	for i, ep := range ro.Episodes {
		out[i] = ep.Trained()
	}
	return out
}

// turnRewards places each episode's rewards for PPO: each turn's environment reward, times
// envWeight, on the turn's last sampled token, and the other terms of the total (total less
// envWeight times the return) on the last turn's. A failed episode gets none.
func turnRewards(ro *Rollout, total []float64, envWeight float64) [][]float64 {
	out := objective.Zeros(ro.Rows(), ro.Width())
	for i, ep := range ro.Episodes {
		if !ep.Trained() || len(ep.Turns) == 0 {
			continue
		}
		for _, turn := range ep.Turns {
			out[i][turn.End-1] += envWeight * turn.Reward
		}
		out[i][ep.Turns[len(ep.Turns)-1].End-1] += total[i] - envWeight*ep.Return
	}
	return out
}

// episodeMetrics adds the episodes' diagnostics to m: turns, tool calls and failures, stop
// reasons, the environment's tokens and time, and the share that re-templating would change.
func episodeMetrics(m map[string]float64, ro *Rollout) {
	eps := ro.Episodes
	if len(eps) == 0 {
		return
	}
	n := float64(len(eps))
	var turns, maxTurns, calls, failures, envTokens, drift, withTurns, trained float64
	for _, ep := range eps {
		turns += float64(len(ep.Turns))
		maxTurns = math.Max(maxTurns, float64(len(ep.Turns)))
		for _, t := range ep.Turns {
			calls += float64(t.ToolCalls)
			failures += float64(t.ToolFailures)
		}
		envTokens += float64(ep.EnvTokens)
		if len(ep.Turns) > 0 && ep.Trained() {
			withTurns++
			if ep.Drift {
				drift++
			}
		}
	}
	for _, r := range episode.StopReasons {
		k := 0
		for _, ep := range eps {
			if ep.StopReason == r {
				k++
			}
		}
		m["episode/stop_reason/"+r] = float64(k) / n
	}
	m["turns/mean"], m["turns/max"] = turns/n, maxTurns
	m["tools/call_frequency"] = calls / math.Max(turns, 1)
	m["tools/failure_frequency"] = failures / math.Max(calls, 1)
	m["episode/env_tokens_mean"] = envTokens / n
	m["retokenization_drift"] = drift / math.Max(withTurns, 1)
	total := 0
	for _, l := range ro.Masks.Lengths {
		total += l
	}
	for i := range ro.Masks.Loss {
		for _, x := range ro.Masks.Loss[i] {
			trained += x
		}
	}
	m["episode/trained_token_fraction"] = trained / math.Max(float64(total), 1)
	sampled := trained + float64(ro.Masks.ForcedTokens)
	m["forced_fraction"] = float64(ro.Masks.ForcedTokens) / math.Max(sampled, 1)
}

// episodeTurns are an episode's segments for the completions log: each turn and each
// environment reply, with their tokens and whether they train.
func episodeTurns(ep *episode.Episode, decode func([]int32) (string, error)) []CompletionTurn {
	var out []CompletionTurn
	for k, turn := range ep.Turns {
		out = append(out, CompletionTurn{Role: "assistant", Text: turn.Text, Tokens: slices.Clone(ep.Tokens[turn.Start:turn.End]), Trained: ep.Trained()})
		end := len(ep.Tokens)
		if k+1 < len(ep.Turns) {
			end = ep.Turns[k+1].Start
		}
		if end > turn.End {
			toks := ep.Tokens[turn.End:end]
			text, _ := decode(toks) // the tokens were encoded from text: they decode
			out = append(out, CompletionTurn{Role: "environment", Text: text, Tokens: slices.Clone(toks)})
		}
	}
	return out
}
