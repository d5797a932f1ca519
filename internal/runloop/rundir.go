package runloop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
)

// open prepares the run directory: resumes its checkpoint when asked, refuses to overwrite one
// otherwise, and opens the metrics file for appending.
func open(t Trainer, o Options) (*metricsFile, error) {
	// check made sure a trainer with a run directory is Resumable.
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
		step, err := t.(Resumable).Restore(ckpt)
		if err != nil {
			return nil, err
		}
		if _, err := TrimMetrics(path, step); err != nil {
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

// TrimMetrics drops the lines of a metrics file written after step (by a run that stopped
// after its last checkpoint: those steps run again) and a torn last line, and returns how
// many it dropped. Lines without a step belong to no step and stay. A missing file is fine.
func TrimMetrics(path string, step int) (int, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var keep bytes.Buffer
	dropped := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Step *float64 `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step != nil && *rec.Step > float64(step) {
			dropped++
			continue
		}
		keep.Write(sc.Bytes())
		keep.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if dropped == 0 {
		return 0, nil
	}
	return dropped, atomicfile.WriteFile(path, keep.Bytes(), 0o666)
}
