// Package runloop drives a trainer from its current step to its last: checkpoints every few
// steps, at the end and on cancellation, one JSON line of metrics per step, progress lines, and
// a resume that continues a run directory's checkpoint. nn/train's and rl's trainers expose it as Run.
package runloop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Checkpoint and Metrics are the file names inside a run directory.
const (
	Checkpoint = "checkpoint.safetensors"
	Metrics    = "metrics.jsonl"
)

// Options say how Run drives a trainer.
type Options struct {
	// Dir, when set, holds the run: Checkpoint (every SaveEvery steps, at the end, and when the
	// context is cancelled) and Metrics (one JSON object per step, with "step"). An existing
	// checkpoint there is refused unless Resume is set.
	Dir string
	// SaveEvery is the number of steps between checkpoints; 0 saves only at the end and on
	// cancellation.
	SaveEvery int
	// Resume continues the checkpoint in Dir, when there is one, bit for bit; metric lines
	// written after it (by a run that crashed) are dropped.
	Resume bool
	// Progress receives one line per step; nil writes none.
	Progress io.Writer
	// OnStep sees each step's metrics; an error from it ends the run (after a checkpoint).
	OnStep func(step int, metrics map[string]float64) error
}

// Trainer is what Run drives.
type Trainer interface {
	// Step takes one training step and returns its number (1-based) and metrics; stop says the
	// trainer ended training on its own (its reason belongs in the metrics or the error).
	Step() (step int, metrics map[string]float64, stop bool, err error)
	// Done reports whether the last step was taken.
	Done() bool
	Save(path string) error
	// Restore continues from the checkpoint at path and returns its step.
	Restore(path string) (int, error)
}

// Run drives t to its last step. A cancelled context stops it after the step in progress, with
// a checkpoint, and returns the context's error.
func Run(ctx context.Context, t Trainer, o Options) error {
	if o.SaveEvery < 0 {
		return fmt.Errorf("save every %d steps: want >= 0 (0: at the end only)", o.SaveEvery)
	}
	metrics, err := open(t, o)
	if err != nil {
		return err
	}
	defer metrics.close()
	save := func() error {
		if o.Dir == "" {
			return nil
		}
		if err := metrics.sync(); err != nil {
			return err
		}
		return t.Save(filepath.Join(o.Dir, Checkpoint))
	}
	for !t.Done() {
		if ctx.Err() != nil {
			return errors.Join(save(), ctx.Err())
		}
		step, m, stop, err := t.Step()
		if err != nil {
			return err
		}
		if err := metrics.write(step, m); err != nil {
			return err
		}
		progress(o.Progress, step, m)
		if o.OnStep != nil {
			if err := o.OnStep(step, m); err != nil {
				return errors.Join(save(), err)
			}
		}
		if stop {
			break
		}
		if o.SaveEvery > 0 && step%o.SaveEvery == 0 {
			if err := save(); err != nil {
				return err
			}
		}
	}
	return save()
}

// open prepares the run directory: resumes its checkpoint when asked, refuses to overwrite one
// otherwise, and opens the metrics file for appending.
func open(t Trainer, o Options) (*metricsFile, error) {
	if o.Dir == "" {
		return &metricsFile{}, nil
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	ckpt, path := filepath.Join(o.Dir, Checkpoint), filepath.Join(o.Dir, Metrics)
	_, statErr := os.Stat(ckpt)
	switch {
	case statErr == nil && o.Resume:
		step, err := t.Restore(ckpt)
		if err != nil {
			return nil, err
		}
		if err := trim(path, step); err != nil {
			return nil, err
		}
	case statErr == nil:
		return nil, fmt.Errorf("%s already holds a run's checkpoint: resume it, or choose another directory", o.Dir)
	case !errors.Is(statErr, os.ErrNotExist):
		return nil, statErr
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &metricsFile{f: f}, nil
}

// metricsFile appends one whole line per step; a failed write ends the run rather than lose
// lines silently.
type metricsFile struct{ f *os.File }

func (m *metricsFile) write(step int, metrics map[string]float64) error {
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

func (m *metricsFile) sync() error {
	if m.f == nil {
		return nil
	}
	return m.f.Sync()
}

func (m *metricsFile) close() {
	if m.f != nil {
		m.f.Close()
	}
}

// trim drops the lines of steps after step, and a torn last line.
func trim(path string, step int) error {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step == nil || *rec.Step > step {
			continue
		}
		keep.Write(sc.Bytes())
		keep.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, keep.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// progressKeys are the metrics a progress line shows, those a step has.
var progressKeys = []string{"loss", "reward", "kl", "grad_norm", "learning_rate"}

func progress(w io.Writer, step int, m map[string]float64) {
	if w == nil {
		return
	}
	line := fmt.Sprintf("step %d", step)
	for _, k := range progressKeys {
		if v, ok := m[k]; ok {
			line += fmt.Sprintf(" | %s %.4g", k, v)
		}
	}
	fmt.Fprintln(w, line)
}
