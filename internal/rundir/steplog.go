package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// OpenSteps prepares dir for a trainer's run: with resume, restores its checkpoint (given the
// checkpoint's path, restore returns the step it holds) and drops the metric lines after it;
// without, refuses a directory that holds a checkpoint. It opens the metrics file for
// appending; an empty dir keeps no files.
func OpenSteps(dir string, resume bool, restore func(checkpoint string) (step int, err error)) (*StepLog, error) {
	if dir == "" {
		return &StepLog{}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ckpt, path := filepath.Join(dir, Checkpoint), filepath.Join(dir, Metrics)
	_, statErr := os.Stat(ckpt)
	switch {
	case statErr == nil && resume:
		step, err := restore(ckpt)
		if err != nil {
			return nil, err
		}
		if _, err := TrimMetrics(path, step); err != nil {
			return nil, err
		}
	case statErr == nil:
		return nil, fmt.Errorf("%s already holds a run's checkpoint: resume it, or choose another directory", dir)
	case !errors.Is(statErr, os.ErrNotExist):
		return nil, statErr
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &StepLog{f: f}, nil
}

// StepLog is the metrics file of a trainer's run: one whole line per step; a failed write ends
// the run rather than lose lines silently.
type StepLog struct{ f *os.File }

// Write appends the line of step's metrics.
func (m *StepLog) Write(step int, metrics map[string]float64) error {
	if m.f == nil {
		return nil
	}
	line := []byte(fmt.Sprintf(`{"step":%d`, step))
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		v := metrics[k]
		if k == "step" {
			continue
		}
		name, _ := json.Marshal(k)
		line = append(line, ',')
		line = append(line, name...)
		line = append(line, ':')
		line = appendNumber(line, v)
	}
	line = append(line, '}', '\n')
	if _, err := m.f.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", m.f.Name(), err)
	}
	return nil
}

// appendNumber writes v as JSON, non-finite values as strings (JSON has no NaN).
func appendNumber(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Appendf(b, `"%v"`, v)
	}
	raw, _ := json.Marshal(v)
	return append(b, raw...)
}

// Sync flushes the file to disk.
func (m *StepLog) Sync() error {
	if m.f == nil {
		return nil
	}
	return m.f.Sync()
}

// Close closes the file.
func (m *StepLog) Close() {
	if m.f != nil {
		m.f.Close()
	}
}
