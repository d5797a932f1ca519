package reward

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/internal/lineproto"
	"github.com/vkgrad/vkgrad/rl"
)

// Process is a reward computed by a long-lived external program. For each batch it writes one
// JSON line to the program's standard input,
//
//	{"id": 7, "prompts": [...], "completions": [...], "metadata": [{...}, ...]}
//
// one entry per completion, in order (completions without the EOS text; metadata holds the
// dataset line's other fields, such as "answer"), and reads one line back,
// {"id": 7, "rewards": [...]}: the shape of TRL's reward_func(prompts, completions, **kwargs).
// The id counts the requests from the program's start; echoing it is optional, but a reply
// that carries one must carry its request's (see internal/lineproto, the rule every program
// vkgrad starts follows). A line the program writes with no request waiting, such as a banner,
// is an error quoting it: whatever is not a reply goes to standard error, which is forwarded
// to the log (lines over 64 KiB cut). Each reward is a finite number (rl.Combined refuses
// those beyond ±rl.MaxReward).
//
// If the program dies it is started again once for the batch, with a warning. The program
// runs in a process group of its own, killed whole when the Process closes, and on Linux the
// kernel kills it if vkgrad dies.
type Process struct {
	command string
	timeout time.Duration
	stderr  io.Writer
	// Warn receives warnings: a restart, lines no request asked for. Default: written to the
	// stderr writer NewProcess was given.
	Warn func(msg string)

	mu     sync.Mutex
	run    *lineproto.Program // nil while no program runs
	closed bool
}

// request and reply are the two JSON lines of one batch; lineproto adds the id.
type request struct {
	Prompts     []string  `json:"prompts"`
	Completions []string  `json:"completions"`
	Metadata    []rl.Meta `json:"metadata"`
}

type reply struct {
	Rewards []json.RawMessage `json:"rewards"`
}

// closeGrace is how long the program may take to finish once its input is closed.
const closeGrace = 2 * time.Second

// NewProcess starts command (run by the shell) and returns it as a reward. timeout bounds the
// wait for each batch's answer; stderr receives the program's standard error (nil: dropped).
func NewProcess(command string, timeout time.Duration, stderr io.Writer) (*Process, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("--reward-cmd: empty command")
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("--reward-timeout %s must be positive", timeout)
	}
	if stderr == nil {
		stderr = io.Discard
	}
	p := &Process{command: command, timeout: timeout, stderr: stderr}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Name implements rl.Reward: the metrics call it "cmd".
func (*Process) Name() string { return "cmd" }

// Score implements rl.Reward for a batch of one.
func (p *Process) Score(prompt, completion string, meta rl.Meta) (float64, error) {
	r, err := p.ScoreAll([]string{prompt}, []string{completion}, []rl.Meta{meta})
	if err != nil {
		return 0, err
	}
	return r[0], nil
}

// ScoreAll implements rl.BatchReward: one request line, one reply line.
func (p *Process) ScoreAll(prompts, completions []string, metas []rl.Meta) ([]float64, error) {
	req := request{Prompts: prompts, Completions: make([]string, len(completions)), Metadata: metas}
	for i, c := range completions {
		req.Completions[i] = strings.TrimSuffix(c, rl.EOSText)
	}
	for i, m := range req.Metadata {
		if m == nil {
			req.Metadata[i] = rl.Meta{}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("reward program %q: scoring after Close", p.command)
	}
	out, err := p.exchange(req)
	if errors.Is(err, lineproto.ErrEnded) {
		// One restart per batch: a program that crashed on a rare input gets a fresh start,
		// one that dies on every batch is reported.
		p.warn(fmt.Sprintf("%v; starting it again", err))
		if rerr := p.start(); rerr != nil {
			return nil, fmt.Errorf("%w; restarting it: %v", err, rerr)
		}
		out, err = p.exchange(req)
	}
	if err != nil {
		return nil, err
	}
	return parseReply(out, len(completions))
}

// exchange sends one request and returns its reply. A program that ended is stopped and the
// error, wrapping lineproto.ErrEnded, says how it ended; one too slow is stopped.
func (p *Process) exchange(req request) (string, error) {
	if p.run == nil {
		return "", fmt.Errorf("reward program %q: %w (stopped after an earlier error)", p.command, lineproto.ErrEnded)
	}
	out, err := p.run.Conn.Call(req, p.timeout)
	switch {
	case err == nil:
		return string(out), nil
	case errors.Is(err, lineproto.ErrEnded):
		status, _ := p.stop(closeGrace)
		return "", fmt.Errorf("reward program %q: %w (%s)", p.command, err, status)
	case errors.Is(err, lineproto.ErrTimeout):
		p.stop(0)
		return "", fmt.Errorf("reward program %q gave no answer within %s (stopped; raise --reward-timeout if it needs longer)", p.command, p.timeout)
	default:
		return "", fmt.Errorf("reward program %q: %w", p.command, err)
	}
}

// parseReply checks one reply line and returns its rewards; errors quote the line.
func parseReply(line string, want int) ([]float64, error) {
	quoted := lineproto.Quote(line)
	var r reply
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reward program answered %s: not a JSON object (%v); write {\"rewards\": [...]} on one line and anything else to stderr", quoted, err)
	}
	if r.Rewards == nil {
		return nil, fmt.Errorf("reward program answered %s: no \"rewards\" list", quoted)
	}
	if len(r.Rewards) != want {
		return nil, fmt.Errorf("reward program answered %s: %d rewards for %d completions", quoted, len(r.Rewards), want)
	}
	out := make([]float64, want)
	for i, raw := range r.Rewards {
		if err := json.Unmarshal(raw, &out[i]); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, fmt.Errorf("reward program answered %s: reward %d is %s, not a number", quoted, i, raw)
		}
	}
	return out, nil
}

// start runs the command.
func (p *Process) start() error {
	prog, err := lineproto.Start(lineproto.Command{Line: p.command, Stderr: p.stderr, Prefix: "reward-cmd: "})
	if err != nil {
		return fmt.Errorf("starting reward program %q: %w", p.command, err)
	}
	p.run = prog
	return nil
}

// stop ends the running program (see lineproto.Program.Stop).
func (p *Process) stop(grace time.Duration) (status string, leftover []string) {
	if p.run == nil {
		return "not running", nil
	}
	r := p.run
	p.run = nil
	return r.Stop(grace)
}

// Close ends the program: its standard input is closed so it can finish, then its process
// group is killed. Lines it wrote that no request asked for are an error: its replies may
// have been out of step.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	_, leftover := p.stop(closeGrace)
	if len(leftover) > 0 {
		return fmt.Errorf("reward program %q wrote %d line(s) no request asked for, the first %s: if it does not echo the requests' \"id\", its rewards may have been paired with the wrong batches", p.command, len(leftover), lineproto.Quote(leftover[0]))
	}
	return nil
}

// warn passes a warning on.
func (p *Process) warn(msg string) {
	if p.Warn != nil {
		p.Warn(msg)
		return
	}
	fmt.Fprintf(p.stderr, "vkgrad: warning: %s\n", msg)
}
