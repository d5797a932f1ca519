package reward

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/rl"
)

// Process is a reward computed by a long-lived external program. For each batch it writes one
// JSON line to the program's standard input,
//
//	{"prompts": [...], "completions": [...], "metadata": [{...}, ...]}
//
// one entry per completion, in order (completions without the EOS text; metadata holds the
// dataset line's other fields, such as "answer"), and reads one line back, {"rewards": [...]}:
// the shape of TRL's reward_func(prompts, completions, **kwargs). The program's standard error
// goes to the log; if the program dies it is started again once for the batch.
type Process struct {
	command string
	timeout time.Duration
	stderr  io.Writer

	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout lines; closed when the program's stdout ends
}

// request and reply are the two JSON lines of one batch.
type request struct {
	Prompts     []string  `json:"prompts"`
	Completions []string  `json:"completions"`
	Metadata    []rl.Meta `json:"metadata"`
}

type reply struct {
	Rewards []json.RawMessage `json:"rewards"`
}

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
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("reward process: encoding the batch: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := p.exchange(append(line, '\n'))
	if errors.Is(err, errDied) {
		// One restart per batch: a program that crashed on a rare input gets a fresh start,
		// one that dies on every batch is reported.
		if rerr := p.start(); rerr != nil {
			return nil, fmt.Errorf("%w; restarting it: %v", err, rerr)
		}
		out, err = p.exchange(append(line, '\n'))
	}
	if err != nil {
		return nil, err
	}
	return parseReply(out, len(completions))
}

var errDied = errors.New("reward process ended")

// exchange writes one request line and waits for one reply line.
func (p *Process) exchange(line []byte) (string, error) {
	if p.cmd == nil {
		return "", fmt.Errorf("%w (%q)", errDied, p.command)
	}
	if _, err := p.stdin.Write(line); err != nil {
		p.stop()
		return "", fmt.Errorf("%w: writing to %q: %v", errDied, p.command, err)
	}
	select {
	case out, ok := <-p.lines:
		if !ok {
			status := p.stop()
			return "", fmt.Errorf("%w: %q closed its output without answering (%s)", errDied, p.command, status)
		}
		return out, nil
	case <-time.After(p.timeout):
		p.stop()
		return "", fmt.Errorf("reward process %q gave no answer within %s (stopped; raise --reward-timeout if it needs longer)", p.command, p.timeout)
	}
}

// parseReply checks one reply line and returns its rewards; errors quote the line.
func parseReply(line string, want int) ([]float64, error) {
	quoted := line
	if len(quoted) > 200 {
		quoted = quoted[:200] + "..."
	}
	var r reply
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reward process answered %q: not a JSON object (%v); write {\"rewards\": [...]} on one line and anything else to stderr", quoted, err)
	}
	if r.Rewards == nil {
		return nil, fmt.Errorf("reward process answered %q: no \"rewards\" list", quoted)
	}
	if len(r.Rewards) != want {
		return nil, fmt.Errorf("reward process answered %q: %d rewards for %d completions", quoted, len(r.Rewards), want)
	}
	out := make([]float64, want)
	for i, raw := range r.Rewards {
		if err := json.Unmarshal(raw, &out[i]); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, fmt.Errorf("reward process answered %q: reward %d is %s, not a number", quoted, i, raw)
		}
	}
	return out, nil
}

// start runs the command with pipes to its standard streams.
func (p *Process) start() error {
	shell, flag := "sh", "-c"
	if runtime.GOOS == "windows" {
		shell, flag = "cmd", "/C"
	}
	cmd := exec.Command(shell, flag, p.command)
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting reward process %q: %w", p.command, err)
	}
	p.cmd, p.stdin = cmd, stdin
	p.lines = make(chan string)
	go forwardLines(stdout, p.lines)
	go copyStderr(stderr, p.stderr)
	return nil
}

// forwardLines sends each line of r to lines and closes it at the end.
func forwardLines(r io.Reader, lines chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		lines <- sc.Text()
	}
	close(lines)
}

// copyStderr passes the program's standard error on, one prefixed line at a time.
func copyStderr(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		fmt.Fprintf(w, "reward-cmd: %s\n", sc.Text())
	}
}

// stop ends the program and says how it ended.
func (p *Process) stop() string {
	if p.cmd == nil {
		return "not running"
	}
	p.stdin.Close()
	killGroup(p.cmd)
	err := p.cmd.Wait()
	p.cmd = nil
	go func(lines <-chan string) { // let the reader goroutine finish
		for range lines {
		}
	}(p.lines)
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// Close ends the program: its standard input is closed so it can finish, then it is killed
// after a grace period.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	p.stdin.Close()
	done := make(chan error, 1)
	cmd := p.cmd
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		killGroup(cmd)
		<-done
	}
	p.cmd = nil
	return nil
}
