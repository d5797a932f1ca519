package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkgrad/vkgrad/internal/lineproto"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// ErrEnv marks the errors an environment process causes: a reply {"error": ...}, a reply that
// breaks the protocol, a process that crashed or did not answer in time. Such an error ends
// its episode; the trainer counts it and goes on with the other episodes.
var ErrEnv = errors.New("environment process")

// errRestarted marks the error of an episode whose process was started again since its reset.
var errRestarted = errors.New("its process failed and was started again")

// DefaultProcessTimeout is how long a process may take to answer one request when
// ProcessConfig.Timeout is zero.
const DefaultProcessTimeout = 60 * time.Second

// MaxSeed is the largest seed Reset sends: 2^53-1, the largest integer every JSON reader
// (Python's float, JavaScript's number) holds exactly.
const MaxSeed = 1<<53 - 1

// processCloseGrace is how long a process may take to finish once its input is closed, and
// how long Close waits for a request in flight before it kills the process.
const processCloseGrace = 2 * time.Second

// ProcessConfig says how to run environment processes.
type ProcessConfig struct {
	// Command is run by the shell, once per worker.
	Command string
	// Workers is the number of processes; 0 means 1.
	Workers int
	// Timeout bounds each request's answer; zero means DefaultProcessTimeout.
	Timeout time.Duration
	// Dir is the processes' working directory; "" is vkgrad's.
	Dir string
	// Stderr receives the processes' standard error, each line prefixed "env-cmd N: " with
	// the worker's number; nil drops it.
	Stderr io.Writer
	// Warn receives warnings (a process started again, and why). Default: written to Stderr.
	Warn func(msg string)
}

// Processes runs environments as separate programs speaking one JSON object a line (see
// the package documentation for the protocol). Each episode stays on one process; a process
// holds many episodes, and its requests, whatever their episode, go one at a time: the next
// is sent once the last is answered. Episodes of different processes run in parallel.
//
// A process that crashes, writes a line that is not a JSON object, echoes another episode or
// turn, writes a line no request asked for, or does not answer within the timeout is stopped
// and started again; every episode open on it ends, its next call returning an ErrEnv error.
// Each process runs in a process group of its own, killed whole on Close, and on Linux the
// kernel kills it if vkgrad dies.
type Processes struct {
	cfg     ProcessConfig
	workers []*worker

	mu       sync.Mutex // guards the workers' open counts
	closed   atomic.Bool
	episodes atomic.Uint64 // episode ids handed out
	restarts atomic.Int64
}

// worker is one process and the episodes assigned to it.
type worker struct {
	pool  *Processes
	index int
	// token holds one value while a request is in flight: requests go one at a time.
	token chan struct{}
	// prog is the running process, nil once it failed and could not be started again. It is
	// replaced only while the token is held; Close reads it without, to kill a stuck request.
	prog atomic.Pointer[lineproto.Program]
	// generation numbers the worker's processes from 1, going up at each failure: an episode
	// reset in an earlier one has ended, even when no process could be started again since.
	generation int
	started    bool   // a process was started: the next start is a restart
	failure    string // why the last process was stopped
	open       int    // episodes assigned and not closed; guarded by pool.mu
}

// StartProcesses starts cfg.Workers processes.
func StartProcesses(cfg ProcessConfig) (*Processes, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("--env-cmd: empty command")
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("--env-workers %d must be positive", cfg.Workers)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("--env-timeout %s must be positive", cfg.Timeout)
	}
	cfg.Workers = max(cfg.Workers, 1)
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultProcessTimeout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	p := &Processes{cfg: cfg}
	for i := range cfg.Workers {
		w := &worker{pool: p, index: i, token: make(chan struct{}, 1), generation: 1}
		if err := w.start(); err != nil {
			p.Close()
			return nil, err
		}
		p.workers = append(p.workers, w)
	}
	return p, nil
}

// Factory returns a factory whose every Env is one episode with a fresh id, assigned to the
// process with the fewest open episodes.
func (p *Processes) Factory() Factory {
	return func() (Env, error) {
		if p.closed.Load() {
			return nil, fmt.Errorf("environment processes %q: a new episode after Close", p.cfg.Command)
		}
		id := fmt.Sprintf("e%d", p.episodes.Add(1))
		return &processEnv{w: p.assign(), id: id}, nil
	}
}

// assign picks the worker with the fewest open episodes, the first of equals.
func (p *Processes) assign() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := p.workers[0]
	for _, w := range p.workers[1:] {
		if w.open < best.open {
			best = w
		}
	}
	best.open++
	return best
}

// release gives up an episode's place on w.
func (p *Processes) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.open--
}

// Restarts counts the processes started again after a failure.
func (p *Processes) Restarts() int { return int(p.restarts.Load()) }

// Close stops every process: each gets its input closed and a moment to finish, then its
// process group is killed. A request in flight gets the same moment before its process is
// killed. Lines a process wrote that no request asked for are an error. Calls after Close
// fail; a second Close does nothing.
func (p *Processes) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	errs := make([]error, len(p.workers))
	var wg sync.WaitGroup
	for i, w := range p.workers {
		wg.Go(func() { errs[i] = w.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// start starts the worker's process.
func (w *worker) start() error {
	cfg := w.pool.cfg
	prog, err := lineproto.Start(lineproto.Command{Line: cfg.Command, Dir: cfg.Dir, Stderr: cfg.Stderr, Prefix: fmt.Sprintf("env-cmd %d: ", w.index)})
	if err != nil {
		return fmt.Errorf("%w %d (%q): starting it: %v", ErrEnv, w.index, cfg.Command, err)
	}
	if w.started {
		w.pool.restarts.Add(1)
	}
	w.started = true
	w.prog.Store(prog)
	return nil
}

// stop ends the worker's process for Close.
func (w *worker) stop() error {
	select {
	case w.token <- struct{}{}:
	case <-time.After(processCloseGrace):
		if prog := w.prog.Load(); prog != nil {
			prog.Kill() // the request in flight fails at once and gives the token back
		}
		w.token <- struct{}{}
	}
	defer w.unlock()
	prog := w.prog.Swap(nil)
	if prog == nil {
		return nil
	}
	if _, leftover := prog.Stop(processCloseGrace); len(leftover) > 0 {
		return fmt.Errorf("%w %d (%q) wrote %d line(s) no request asked for, the first %s: if it does not echo the requests' \"id\", its replies may have gone to the wrong requests", ErrEnv, w.index, w.pool.cfg.Command, len(leftover), lineproto.Quote(leftover[0]))
	}
	return nil
}

// lock waits for the worker's turn, or for ctx to end.
func (w *worker) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case w.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *worker) unlock() { <-w.token }

// exchange sends an episode's request and returns its reply, checked to be a JSON object
// echoing the request's episode and turn if it echoes them. The request is sent once ctx
// allows it; from then on only the timeout bounds the wait, since giving up on a reply would
// lose the pairing of the later ones. Any failure of the process stops it, starts it again and
// ends the episodes open on it.
func (w *worker) exchange(ctx context.Context, e *processEnv, what string, turn int, req any) (reply, error) {
	if err := w.lock(ctx); err != nil {
		return reply{}, fmt.Errorf("episode %s %s: %w", e.id, what, err)
	}
	defer w.unlock()
	if w.pool.closed.Load() {
		return reply{}, fmt.Errorf("environment processes %q: episode %s %s after Close", w.pool.cfg.Command, e.id, what)
	}
	if e.generation != 0 && e.generation != w.generation {
		return reply{}, w.restartedError(e)
	}
	prog := w.prog.Load()
	if prog == nil {
		if err := w.start(); err != nil {
			return reply{}, err
		}
		prog = w.prog.Load()
	}
	e.generation = w.generation
	line, err := prog.Conn.Call(req, w.pool.cfg.Timeout)
	if err != nil {
		return reply{}, w.fail(prog, e, what, err)
	}
	r, err := parseFrame(line, e.id, turn)
	if err != nil {
		return reply{}, w.fail(prog, e, what, err)
	}
	return r, nil
}

// fail stops the process after err, starts it again unless the pool is closing, and returns
// the episode's error.
func (w *worker) fail(prog *lineproto.Program, e *processEnv, what string, err error) error {
	grace := time.Duration(0)
	switch {
	case errors.Is(err, lineproto.ErrEnded):
		grace = processCloseGrace // it is ending: wait for its exit status
	case errors.Is(err, lineproto.ErrTimeout):
		err = fmt.Errorf("no reply within %s (raise --env-timeout if it needs longer)", w.pool.cfg.Timeout)
	}
	w.prog.Store(nil)
	w.generation++
	status, leftover := prog.Stop(grace)
	w.failure = fmt.Sprintf("%v (%s)", err, status)
	if len(leftover) > 0 {
		w.failure += fmt.Sprintf("; it wrote %d more line(s), the first %s", len(leftover), lineproto.Quote(leftover[0]))
	}
	epErr := fmt.Errorf("%w %d (%q): episode %s %s: %s", ErrEnv, w.index, w.pool.cfg.Command, e.id, what, w.failure)
	if w.pool.closed.Load() {
		return epErr
	}
	msg := fmt.Sprintf("environment process %d (%q): %s; starting it again, the episodes open on it have ended", w.index, w.pool.cfg.Command, w.failure)
	if serr := w.start(); serr != nil {
		msg = fmt.Sprintf("environment process %d (%q): %s; starting it again: %v", w.index, w.pool.cfg.Command, w.failure, serr)
	}
	w.pool.warn(msg)
	return epErr
}

// restartedError is the error of an episode whose process was started again.
func (w *worker) restartedError(e *processEnv) error {
	return fmt.Errorf("%w %d (%q): episode %s ended: %w: %s", ErrEnv, w.index, w.pool.cfg.Command, e.id, errRestarted, w.failure)
}

// warn passes a warning on.
func (p *Processes) warn(msg string) {
	if p.cfg.Warn != nil {
		p.cfg.Warn(msg)
		return
	}
	fmt.Fprintf(p.cfg.Stderr, "vkgrad: warning: %s\n", msg)
}

// processEnv is one episode on a worker's process. Its methods are called from one goroutine
// at a time; different episodes may be used from any.
type processEnv struct {
	w  *worker
	id string
	// generation is the worker's generation when the reset was sent; 0 before.
	generation int
	turns      int   // turns stepped
	done       bool  // a step reply said done
	ended      error // why the episode ended early
	closed     bool
}

// The requests; lineproto adds "id".
type (
	resetRequest struct {
		Op      string          `json:"op"`
		Episode string          `json:"episode"`
		Seed    uint64          `json:"seed"`
		Sample  int             `json:"sample"`
		Example json.RawMessage `json:"example"`
	}
	stepRequest struct {
		Op      string `json:"op"`
		Episode string `json:"episode"`
		Turn
	}
	closeRequest struct {
		Op      string `json:"op"`
		Episode string `json:"episode"`
	}
)

// Reset sends the reset request and returns the process's opening messages and tools.
func (e *processEnv) Reset(ctx context.Context, example json.RawMessage, seed uint64, sample int) (ResetResult, error) {
	switch {
	case e.closed:
		return ResetResult{}, fmt.Errorf("episode %s: Reset after Close", e.id)
	case e.generation != 0:
		return ResetResult{}, fmt.Errorf("episode %s: Reset twice", e.id)
	case seed > MaxSeed:
		return ResetResult{}, fmt.Errorf("episode %s: seed %d is over 2^53-1, the largest integer a JSON number holds exactly", e.id, seed)
	case sample < 0:
		return ResetResult{}, fmt.Errorf("episode %s: sample %d is negative", e.id, sample)
	}
	if len(example) == 0 {
		example = json.RawMessage("null")
	} else if !json.Valid(example) {
		return ResetResult{}, fmt.Errorf("episode %s: the example is not valid JSON: %s", e.id, lineproto.Quote(string(example)))
	}
	r, err := e.w.exchange(ctx, e, "reset", -1, resetRequest{Op: "reset", Episode: e.id, Seed: seed, Sample: sample, Example: example})
	if err != nil {
		return ResetResult{}, e.end(err)
	}
	res, err := r.resetResult()
	if err != nil {
		return ResetResult{}, e.end(e.replyError("reset", r, err))
	}
	return res, nil
}

// Step sends the turn and returns the process's answer.
func (e *processEnv) Step(ctx context.Context, turn Turn) (StepResult, error) {
	what := fmt.Sprintf("turn %d", turn.Index)
	switch {
	case e.closed:
		return StepResult{}, fmt.Errorf("episode %s %s: Step after Close", e.id, what)
	case e.ended != nil:
		return StepResult{}, fmt.Errorf("%w: episode %s %s: the episode has ended: %v", ErrEnv, e.id, what, e.ended)
	case e.generation == 0:
		return StepResult{}, fmt.Errorf("episode %s %s: Step before Reset", e.id, what)
	case e.done:
		return StepResult{}, fmt.Errorf("episode %s %s: the episode is done", e.id, what)
	case turn.Index != e.turns:
		return StepResult{}, fmt.Errorf("episode %s %s: want turn %d: turns count from 0 without gaps", e.id, what, e.turns)
	}
	if turn.ToolCalls == nil {
		turn.ToolCalls = []toolcall.Call{} // the protocol's list, never null
	}
	r, err := e.w.exchange(ctx, e, what, turn.Index, stepRequest{Op: "step", Episode: e.id, Turn: turn})
	if err != nil {
		return StepResult{}, e.end(err)
	}
	res, err := r.stepResult()
	if err != nil {
		return StepResult{}, e.end(e.replyError(what, r, err))
	}
	e.turns++
	e.done = res.Done
	return res, nil
}

// Close tells the process the episode is over, if the process got its reset: every episode
// reset gets a close, however it ended, unless its process was started again since.
func (e *processEnv) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	defer e.w.pool.release(e.w)
	if e.generation == 0 || e.w.pool.closed.Load() {
		return nil
	}
	r, err := e.w.exchange(context.Background(), e, "close", -1, closeRequest{Op: "close", Episode: e.id})
	if errors.Is(err, errRestarted) {
		return nil // the process holds nothing of the episode
	}
	if err != nil {
		return err
	}
	if err := r.closeResult(); err != nil {
		return e.replyError("close", r, err)
	}
	return nil
}

// end records why the episode ended and returns err.
func (e *processEnv) end(err error) error {
	if errors.Is(err, ErrEnv) && e.ended == nil {
		e.ended = err
	}
	return err
}

// replyError is the error of a reply r that the process sent but that breaks the protocol's
// rules for its fields, or says {"error": ...}.
func (e *processEnv) replyError(what string, r reply, err error) error {
	return fmt.Errorf("%w %d (%q): episode %s %s: reply %s: %v", ErrEnv, e.w.index, e.w.pool.cfg.Command, e.id, what, lineproto.Quote(r.line), err)
}
