package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/vkgrad/vkgrad/internal/tfevents"
)

// MetricsWriter is the metrics file: every line in one write, the first write error kept and
// reported (a full disk stops the run instead of losing lines), synced with each checkpoint.
type MetricsWriter struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	err    error
	events *tfevents.Writer // TensorBoard's copy of each line's numbers, nil when off
}

func (w *MetricsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	if err == nil && n < len(p) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(p))
	}
	if err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.path, err)
		return n, w.err
	}
	if w.events != nil {
		if step, scalars := lineScalars(p); len(scalars) > 0 {
			if err := w.events.Scalars(step, time.Now(), scalars); err != nil {
				w.err = err
			}
		}
	}
	return n, w.err
}

// lineScalars turns one metrics line into TensorBoard scalars at its step: every number, named
// as in the line for a training step and "<kind>/<name>" for the others (eval, val, ...).
func lineScalars(line []byte) (int64, []tfevents.Scalar) {
	var obj map[string]any
	if json.Unmarshal(line, &obj) != nil {
		return 0, nil
	}
	step, _ := obj["step"].(float64)
	kind, _ := obj["kind"].(string)
	prefix := ""
	switch kind {
	case "train", "sft", "grpo", "ppo", "":
	default:
		prefix = kind + "/"
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []tfevents.Scalar
	for _, k := range keys {
		if v, ok := obj[k].(float64); ok && k != "step" {
			out = append(out, tfevents.Scalar{Tag: prefix + k, Value: v})
		}
	}
	return int64(step), out
}

// Err is the first write error, nil while every line was written.
func (w *MetricsWriter) Err() error {
	if w == nil { // a rank other than 0 writes no metrics
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Sync flushes the file to disk (with each checkpoint), returning any earlier write error.
func (w *MetricsWriter) Sync() error {
	if w == nil {
		return nil
	}
	if err := w.Err(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", w.path, err)
	}
	if w.events != nil {
		return w.events.Sync()
	}
	return nil
}

// OpenFile opens the metrics file; tests point it at a full disk.
var OpenFile = os.OpenFile

// OpenMetrics opens dir's metrics file: a resumed run's for appending, after dropping the
// lines of steps taken after its checkpoint's resumedStep (it returns how many it dropped), a
// new run's afresh; with tensorboard, a TensorBoard event file beside it.
func OpenMetrics(dir string, resumed bool, resumedStep int, tensorboard bool) (w *MetricsWriter, dropped int, err error) {
	path := filepath.Join(dir, Metrics)
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if resumed {
		if dropped, err = TrimMetrics(path, resumedStep); err != nil {
			return nil, 0, fmt.Errorf("--resume: %w", err)
		}
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, 0, err
	}
	w = &MetricsWriter{f: f, path: path}
	if tensorboard {
		if w.events, err = tfevents.Create(dir, time.Now()); err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	return w, dropped, nil
}

// Close syncs and closes the file, returning the first error of the run's writes.
func (w *MetricsWriter) Close() error {
	if w == nil {
		return nil
	}
	err := w.Sync()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if w.events != nil {
		if cerr := w.events.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	return err
}
