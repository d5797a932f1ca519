package rlrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/rl"
)

// CompletionLog appends a run's sampled completions (--log-completions N a step, each a JSON
// line with the step, the prompt, the completion and its rewards); nil logs nothing.
type CompletionLog struct {
	f *os.File
	n int
}

// OpenCompletionLog opens dir/completions.jsonl for n completions a step (nil when n is 0); a
// resumed run drops the lines of steps after its checkpoint first.
func OpenCompletionLog(dir string, n, resumedStep int, resumed bool) (*CompletionLog, error) {
	if n <= 0 {
		return nil, nil
	}
	path := filepath.Join(dir, rundir.Completions)
	if resumed {
		if _, err := rundir.TrimMetrics(path, resumedStep); err != nil {
			return nil, err
		}
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !resumed {
		flag |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return &CompletionLog{f: f, n: n}, nil
}

// Write logs the first n completions of a step, one whole line each.
func (l *CompletionLog) Write(step int, cs []rl.Completion) error {
	if l == nil {
		return nil
	}
	for _, c := range cs[:min(l.n, len(cs))] {
		raw, err := json.Marshal(struct {
			Step int `json:"step"`
			rl.Completion
		}{step, c})
		if err != nil {
			return err
		}
		if _, err := l.f.Write(append(raw, '\n')); err != nil {
			return fmt.Errorf("writing %s: %w", l.f.Name(), err)
		}
	}
	return nil
}

// Sync commits the lines written to disk, as a checkpoint is.
func (l *CompletionLog) Sync() error {
	if l == nil {
		return nil
	}
	return l.f.Sync()
}

// Close closes the file.
func (l *CompletionLog) Close() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
