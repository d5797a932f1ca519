package episode

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/env"
)

// Tokenizer encodes text, the special tokens a template writes included, and decodes ids.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32) (string, error)
}

// Stats counts the work of a Run.
type Stats struct {
	Steps         int     // decoder steps
	Decoded       int     // sampled tokens fed back
	PrefillTokens int     // prompt and environment tokens fed
	SlotSteps     int     // rows times steps
	EnvCalls      int     // resets and steps
	EnvSeconds    float64 // the environment calls' time, summed
	WaitSeconds   float64 // time the decoder waited for an environment
}

// Add returns the sum of two runs' counts.
func (s Stats) Add(o Stats) Stats {
	return Stats{Steps: s.Steps + o.Steps, Decoded: s.Decoded + o.Decoded, PrefillTokens: s.PrefillTokens + o.PrefillTokens,
		SlotSteps: s.SlotSteps + o.SlotSteps, EnvCalls: s.EnvCalls + o.EnvCalls, EnvSeconds: s.EnvSeconds + o.EnvSeconds,
		WaitSeconds: s.WaitSeconds + o.WaitSeconds}
}

// Run runs one episode per task with d's rows as slots and newEnv's environments, and returns
// the episodes in task order. Errors of an environment end its episode (StopEnvError); an
// error of the decoder, the renderer or the tokenizer ends the run.
func Run(d sample.RowDecoder, tok Tokenizer, r Renderer, newEnv env.Factory, tasks []Task, cfg Config) ([]*Episode, Stats, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Stats{}, err
	}
	greedy := cfg.Sampling.Temperature == 0
	for i, t := range tasks {
		if t.RNG == nil && !greedy {
			return nil, Stats{}, fmt.Errorf("episode %d has no random stream", i)
		}
	}
	if int(cfg.EndOfTurn) >= d.VocabSize() {
		return nil, Stats{}, fmt.Errorf("end_of_turn %d: outside the model's vocabulary of %d", cfg.EndOfTurn, d.VocabSize())
	}
	run := newRunner(d, tok, r, newEnv, tasks, cfg)
	defer run.closeAll()
	if err := run.loop(); err != nil {
		return nil, run.stats, err
	}
	run.closeAll()
	eps := make([]*Episode, len(tasks))
	for i, s := range run.states {
		eps[i] = s.ep
	}
	if err := markDrift(eps, tok, r, cfg.EndOfTurn); err != nil {
		return nil, run.stats, err
	}
	return eps, run.stats, nil
}

// runner is the state of one Run.
type runner struct {
	d      sample.RowDecoder
	tok    Tokenizer
	r      Renderer
	newEnv env.Factory
	tasks  []Task
	cfg    Config
	budget int // positions an episode may fill

	states []*state
	queue  []int // tasks not yet started, in order
	slot   []int // the task on each slot, -1 when free
	free   []int // free slots, ascending
	now    int   // the logical step: which rows share a step depends on it alone
	stats  Stats

	pickers []*sample.Picker
	closing sync.WaitGroup
}

// state is one episode's progress.
type state struct {
	ep        *Episode
	env       env.Env
	feed      []int32 // tokens to feed at the next step the episode joins
	rejoin    int     // the logical step from which it may be fed again
	call      *call   // the environment call it waits on, if any
	turnStart int     // where the turn being written starts in ep.Tokens
	last      int32   // the last sampled token, fed with the next delta
	full      bool    // the turn being answered filled the context
	started   time.Time
}

// call is one environment call in flight.
type call struct {
	done    chan struct{}
	started time.Time
	reset   env.ResetResult
	step    env.StepResult
	err     error
	took    time.Duration
}

func newRunner(d sample.RowDecoder, tok Tokenizer, r Renderer, newEnv env.Factory, tasks []Task, cfg Config) *runner {
	S := d.Rows()
	run := &runner{d: d, tok: tok, r: r, newEnv: newEnv, tasks: tasks, cfg: cfg,
		budget: min(cfg.MaxEpisodeTokens, d.Limit()), states: make([]*state, len(tasks)),
		slot: make([]int, S), free: make([]int, S)}
	for i := range tasks {
		run.queue = append(run.queue, i)
		run.states[i] = &state{ep: &Episode{}}
	}
	for s := range run.slot {
		run.slot[s], run.free[s] = -1, s
	}
	for range max(1, min(runtime.GOMAXPROCS(0), S)) {
		pk, _ := sample.NewPicker(cfg.Sampling) // validated with the config
		run.pickers = append(run.pickers, pk)
	}
	return run
}

// loop applies the environment answers due, starts waiting episodes on free slots and steps
// the decoder, until every episode has stopped.
func (run *runner) loop() error {
	for {
		if err := run.applyDue(); err != nil {
			return err
		}
		run.admit()
		if len(run.free) == len(run.slot) && len(run.queue) == 0 {
			return nil
		}
		rows := run.ready()
		if len(rows) == 0 {
			next, ok := run.nextRejoin()
			if !ok {
				return fmt.Errorf("episode: no episode can go on, yet %d have not stopped", len(run.slot)-len(run.free))
			}
			run.now = next
			continue
		}
		if err := run.step(rows); err != nil {
			return err
		}
		run.now++
	}
}

// admit starts waiting episodes on the free slots, lowest first: each gets its environment and
// a reset call, answered RejoinSteps steps later.
func (run *runner) admit() {
	for len(run.free) > 0 && len(run.queue) > 0 {
		i, s := run.queue[0], run.free[0]
		run.queue, run.free = run.queue[1:], run.free[1:]
		run.slot[s] = i
		st := run.states[i]
		st.started = time.Now()
		t := run.tasks[i]
		st.ep.Tools = t.Tools
		e, err := run.newEnv()
		if err != nil {
			st.call = failed(fmt.Errorf("starting the environment: %w", err))
		} else {
			st.env = e
			st.call = run.start(func(ctx context.Context, c *call) {
				c.reset, c.err = e.Reset(ctx, t.Example, t.Seed, t.Sample)
			})
		}
		st.rejoin = run.now + run.cfg.RejoinSteps
	}
}

// failed is a call that failed before it started.
func failed(err error) *call {
	c := &call{done: make(chan struct{}), err: err}
	close(c.done)
	return c
}

// start runs an environment call on its own goroutine, under the call timeout.
func (run *runner) start(do func(ctx context.Context, c *call)) *call {
	c := &call{done: make(chan struct{}), started: time.Now()}
	run.stats.EnvCalls++
	go func() {
		defer close(c.done)
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if run.cfg.EnvTimeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, run.cfg.EnvTimeout)
		}
		defer cancel()
		t0 := time.Now()
		do(ctx, c)
		c.took = time.Since(t0)
	}()
	return c
}

// applyDue waits for the answers due at this step, slot by slot, and applies them.
func (run *runner) applyDue() error {
	for s, i := range run.slot {
		if i < 0 {
			continue
		}
		st := run.states[i]
		if st.call == nil || st.rejoin > run.now {
			continue
		}
		c := st.call
		if !run.wait(c) {
			run.abandon(s, st)
			continue
		}
		st.call = nil
		run.stats.EnvSeconds += c.took.Seconds()
		var err error
		if st.ep.Prompt == nil {
			err = run.applyReset(s, st, c)
		} else {
			err = run.applyStep(s, st, c)
		}
		if err != nil {
			return fmt.Errorf("episode %d: %w", i, err)
		}
	}
	return nil
}

// envGrace is how long past EnvTimeout a call may take before the episode gives up on it: an
// environment that ignores its context's deadline must not hold the batch for ever.
const envGrace = time.Second

// wait blocks until c has answered, or until EnvTimeout and envGrace have passed since it
// started (false).
func (run *runner) wait(c *call) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	t0 := time.Now()
	defer func() { run.stats.WaitSeconds += time.Since(t0).Seconds() }()
	if run.cfg.EnvTimeout == 0 {
		<-c.done
		return true
	}
	timer := time.NewTimer(time.Until(c.started.Add(run.cfg.EnvTimeout + envGrace)))
	defer timer.Stop()
	select {
	case <-c.done:
		return true
	case <-timer.C:
		return false
	}
}

// abandon ends an episode whose environment call outlived its deadline; the environment is
// closed once the call returns, if it ever does.
func (run *runner) abandon(s int, st *state) {
	c, e := st.call, st.env
	st.env = nil
	go func() {
		<-c.done
		_ = e.Close()
	}()
	run.stop(s, st, StopEnvError, fmt.Errorf("no answer within %v: the environment ignored its deadline", run.cfg.EnvTimeout))
}

// applyReset renders and encodes the opening conversation, the reset's messages and tools
// included, for the episode's first step.
func (run *runner) applyReset(s int, st *state, c *call) error {
	if c.err != nil {
		st.ep.Prompt = []int32{}
		run.stop(s, st, StopEnvError, c.err)
		return nil
	}
	t := run.tasks[run.slot[s]]
	st.ep.Messages = append(slices.Clone(t.Messages), c.reset.Messages...)
	if c.reset.Tools != nil {
		st.ep.Tools = c.reset.Tools
	}
	if len(st.ep.Messages) == 0 {
		st.ep.Prompt = []int32{}
		run.stop(s, st, StopEnvError, fmt.Errorf("no prompt: the task has no messages and the environment's reset gave none"))
		return nil
	}
	text, err := run.r.Prompt(st.ep.Messages, st.ep.Tools)
	if err != nil { // the reset's messages or tools, or the row's, have no place in the template
		st.ep.Prompt = []int32{}
		run.stop(s, st, StopEnvError, fmt.Errorf("rendering the prompt: %w", err))
		return nil
	}
	ids := run.tok.Encode(text)
	if len(ids) == 0 {
		return fmt.Errorf("the prompt %q encodes to no tokens", text)
	}
	if len(ids) >= run.budget {
		return fmt.Errorf("a prompt of %d tokens leaves no room for a turn in a context of %d (max_episode_tokens and the model's context)", len(ids), run.budget)
	}
	if err := run.d.ResetRow(s); err != nil {
		return err
	}
	st.ep.Prompt, st.feed = ids, ids
	return nil
}

// applyStep records the environment's answer to a turn and either stops the episode or queues
// the reply's tokens, after the turn's last sampled token, for the next turn.
func (run *runner) applyStep(s int, st *state, c *call) error {
	ep := st.ep
	turn := &ep.Turns[len(ep.Turns)-1]
	res := c.step
	if c.err == nil && (math.IsNaN(res.Reward) || math.IsInf(res.Reward, 0)) {
		c.err = fmt.Errorf("turn %d: reward %v is not a finite number", len(ep.Turns)-1, res.Reward)
	}
	if c.err != nil {
		run.stop(s, st, StopEnvError, c.err)
		return nil
	}
	turn.Reward, turn.Info, turn.ToolFailures = res.Reward, res.Info, res.ToolFailures()
	ep.Return += res.Reward
	if reason := run.stopAfter(st, res); reason != "" {
		ep.Messages = append(ep.Messages, res.Messages...) // logged, not tokenized
		run.stop(s, st, reason, nil)
		return nil
	}
	msgs := run.capToolOutputs(res.Messages) // what the model sees, and so the transcript
	ep.Messages = append(ep.Messages, msgs...)
	text, err := run.r.Delta(msgs, ep.Tools, turn.Truncated)
	if err != nil { // an empty reply, a role the template has no place for: the environment's doing
		run.stop(s, st, StopEnvError, fmt.Errorf("its reply to turn %d: %w", len(ep.Turns)-1, err))
		return nil
	}
	ids := run.tok.Encode(text)
	if len(ep.Prompt)+len(ep.Tokens)+len(ids) >= run.budget {
		run.stop(s, st, StopMaxEpisodeTokens, nil)
		return nil
	}
	ep.EnvTokens += len(ids)
	for _, id := range ids {
		ep.appendToken(id, false, sample.Pick{Cutoff: sample.NoCutoff})
	}
	st.feed = append([]int32{st.last}, ids...)
	st.turnStart = len(ep.Tokens)
	return nil
}

// stopAfter is why the episode stops after the environment's answer res, "" when it goes on.
func (run *runner) stopAfter(st *state, res env.StepResult) string {
	switch {
	case res.Done:
		return StopDone
	case st.full:
		return StopMaxEpisodeTokens
	case len(st.ep.Turns) >= run.cfg.MaxTurns:
		return StopMaxTurns
	case run.timedOut(st):
		return StopEpisodeTimeout
	}
	return ""
}

func (run *runner) timedOut(st *state) bool {
	return run.cfg.EpisodeTimeout > 0 && time.Since(st.started) > run.cfg.EpisodeTimeout
}

// stop ends an episode, closes its environment in the background and frees its slot.
func (run *runner) stop(s int, st *state, reason string, err error) {
	st.ep.StopReason = reason
	if err != nil {
		st.ep.Error = err.Error()
	}
	st.feed, st.call = nil, nil
	if e := st.env; e != nil {
		st.env = nil
		run.closing.Go(func() { _ = e.Close() })
	}
	run.slot[s] = -1
	i, _ := slices.BinarySearch(run.free, s)
	run.free = slices.Insert(run.free, i, s)
}

// closeAll waits for the environments being closed, and closes those of episodes a failed
// run left open: at once, or once their calls have returned.
func (run *runner) closeAll() {
	for _, st := range run.states {
		if st.env == nil {
			continue
		}
		e, c := st.env, st.call
		st.env = nil
		if c == nil {
			run.closing.Go(func() { _ = e.Close() })
			continue
		}
		go func() { // a call in flight may never return: the run does not wait for it
			<-c.done
			_ = e.Close()
		}()
	}
	run.closing.Wait()
}

// ready lists the slots with tokens to feed at this step.
func (run *runner) ready() []int {
	var rows []int
	for s, i := range run.slot {
		if i >= 0 && run.states[i].call == nil && len(run.states[i].feed) > 0 {
			rows = append(rows, s)
		}
	}
	return rows
}

// nextRejoin is the earliest step at which an episode waiting on its environment rejoins;
// false when none waits.
func (run *runner) nextRejoin() (int, bool) {
	next, ok := math.MaxInt, false
	for _, i := range run.slot {
		if i >= 0 && run.states[i].call != nil {
			next, ok = min(next, run.states[i].rejoin), true
		}
	}
	return max(next, run.now+1), ok
}
