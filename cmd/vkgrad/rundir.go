package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/internal/tfevents"
	"github.com/vkgrad/vkgrad/nn/load"
)

// runFiles are what make a directory a run's: a new run never writes over them.
var runFiles = []string{"config.json", "metrics.jsonl", "checkpoint.safetensors"}

// heldRun is a run directory this process owns for the run's life: a lock file, held with
// flock where the platform has it, keeps a second process out.
type heldRun struct {
	path    string
	lock    *os.File
	created bool            // the directory did not exist before
	had     map[string]bool // run files present before this run
}

// claimRunDir takes dir for a run. A directory that already holds a run is refused unless the
// run is resumed (resume) or replaced (overwrite); another process using it is refused too.
// Temporary files a crash left there are removed. A replaced run's files are moved aside, and
// come back if this run ends before its first checkpoint.
func claimRunDir(dir string, resume, overwrite bool) (*heldRun, error) {
	h := &heldRun{path: dir, had: map[string]bool{}}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		h.created = true
	}
	if err := refuseRun(dir, resume, overwrite); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--run-dir: %w", err)
	}
	lock, err := lockRunDir(dir)
	if err != nil {
		h.removeIfEmpty()
		return nil, err
	}
	h.lock = lock
	restoreReplaced(dir)
	if err := refuseRun(dir, resume, overwrite); err != nil { // the run restored may be one
		h.release(false)
		return nil, err
	}
	removeStaleTemporaries(dir)
	if overwrite && !resume {
		if err := moveAside(dir); err != nil {
			h.release(false)
			return nil, err
		}
	}
	for _, f := range existingRunFiles(dir) {
		h.had[f] = true
	}
	for _, f := range eventFiles(dir) {
		h.had[f] = true
	}
	return h, nil
}

// refuseRun is the error of a new run (neither resumed nor replacing) into a directory that
// already holds one.
func refuseRun(dir string, resume, overwrite bool) error {
	if resume || overwrite {
		return nil
	}
	if found := existingRunFiles(dir); len(found) > 0 {
		return fmt.Errorf("--run-dir %s already holds a run (%s): continue it with --resume %s, or pass --overwrite to replace it",
			dir, strings.Join(found, ", "), dir)
	}
	return nil
}

// replacedFiles are the files of a run that --overwrite replaces: moved aside as
// ".<name>.vkgrad-replaced" until the replacing run saves its first checkpoint.
var replacedFiles = append(slices.Clone(runFiles), completionsFile)

func replacedName(dir, name string) string { return filepath.Join(dir, "."+name+".vkgrad-replaced") }

// moveAside renames the run files in dir to their replaced names, all or none.
func moveAside(dir string) error {
	var moved []string
	for _, f := range replacedFiles {
		err := os.Rename(filepath.Join(dir, f), replacedName(dir, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			for _, m := range moved {
				os.Rename(replacedName(dir, m), filepath.Join(dir, m))
			}
			return fmt.Errorf("--overwrite: keeping the old run's %s until the new run saves: %w", f, err)
		}
		moved = append(moved, f)
	}
	return nil
}

// restoreReplaced settles a replacement that was cut short (the process killed): a replacing
// run that saved a checkpoint keeps the directory and the old files go; one that did not gives
// way to the old run's files. Call it holding the directory's lock.
func restoreReplaced(dir string) {
	var aside []string
	for _, f := range replacedFiles {
		if _, err := os.Lstat(replacedName(dir, f)); err == nil {
			aside = append(aside, f)
		}
	}
	if len(aside) == 0 {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, load.RunCheckpoint)); err == nil {
		dropReplaced(dir)
		return
	}
	for _, f := range replacedFiles {
		os.Remove(filepath.Join(dir, f))
	}
	for _, f := range aside {
		os.Rename(replacedName(dir, f), filepath.Join(dir, f))
	}
}

// restoreReplacedAt runs restoreReplaced on the run directory at path (the directory, or a
// file in it) unless another process holds it: a resume reads the checkpoint before it claims
// the directory.
func restoreReplacedAt(path string) {
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	if m, _ := filepath.Glob(replacedName(dir, "*")); len(m) == 0 {
		return
	}
	lock, err := lockRunDir(dir)
	if err != nil {
		return
	}
	defer unlockRunDir(lock)
	restoreReplaced(dir)
}

// dropReplaced deletes the files of the run that was replaced.
func dropReplaced(dir string) {
	for _, f := range replacedFiles {
		os.Remove(replacedName(dir, f))
	}
}

// saved is told of each checkpoint the run writes: from the first on, the run it replaced is
// gone for good.
func (h *heldRun) saved() {
	if h != nil {
		dropReplaced(h.path)
	}
}

// eventFiles lists the TensorBoard event files in dir, by name.
func eventFiles(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	for i, m := range matches {
		matches[i] = filepath.Base(m)
	}
	return matches
}

func existingRunFiles(dir string) []string {
	var found []string
	for _, f := range runFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			found = append(found, f)
		}
	}
	return found
}

// removeStaleTemporaries deletes what an interrupted atomic write of the run's files left
// behind, by the names only vkgrad gives them: a user's own look-alikes stay.
func removeStaleTemporaries(dir string) {
	atomicfile.RemoveStale(dir, replacedFiles...)
	// Checkpoints of earlier versions were written as ".checkpoint.safetensors.tmp-<digits>".
	matches, _ := filepath.Glob(filepath.Join(dir, ".checkpoint.safetensors.tmp-*"))
	for _, m := range matches {
		if digits := strings.TrimPrefix(filepath.Base(m), ".checkpoint.safetensors.tmp-"); isDigits(digits) {
			os.Remove(m)
		}
	}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// release gives the directory up. A run that failed before saving a checkpoint leaves nothing
// behind: the files it created (and the directory, if it made it) go, and a run it was
// replacing comes back.
func (h *heldRun) release(failed bool) {
	if h == nil || h.lock == nil {
		return
	}
	_, err := os.Stat(filepath.Join(h.path, load.RunCheckpoint))
	saved := err == nil && !h.had[load.RunCheckpoint]
	switch {
	case saved || !failed: // a failed run that made progress is kept to resume
		dropReplaced(h.path)
	default:
		for _, f := range append(append([]string{}, runFiles...), eventFiles(h.path)...) {
			if !h.had[f] {
				os.Remove(filepath.Join(h.path, f))
			}
		}
		restoreReplaced(h.path)
	}
	unlockRunDir(h.lock)
	h.lock = nil
	if failed && !saved {
		h.removeIfEmpty()
	}
}

// removeIfEmpty deletes the directory when this run created it and nothing else is in it.
func (h *heldRun) removeIfEmpty() {
	if !h.created {
		return
	}
	entries, err := os.ReadDir(h.path)
	if err == nil && (len(entries) == 0 || len(entries) == 1 && entries[0].Name() == ".lock") {
		os.Remove(filepath.Join(h.path, ".lock"))
		os.Remove(h.path)
	}
}

// metricsWriter is the metrics file: every line in one write, the first write error kept and
// reported (a full disk stops the run instead of losing lines), synced with each checkpoint.
type metricsWriter struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	err    error
	events *tfevents.Writer // TensorBoard's copy of each line's numbers, nil when off
}

func (w *metricsWriter) Write(p []byte) (int, error) {
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
func (w *metricsWriter) Err() error {
	if w == nil { // a rank other than 0 writes no metrics
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Sync flushes the file to disk (with each checkpoint), returning any earlier write error.
func (w *metricsWriter) Sync() error {
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

// openMetricsTarget opens the metrics file; tests point it at a full disk.
var openMetricsTarget = os.OpenFile

// openMetricsFile opens the metrics file, appending (a resumed run) or starting it afresh, and
// with tensorboard a TensorBoard event file beside it.
func openMetricsFile(path string, appendTo, tensorboard bool) (*metricsWriter, zerolog.Logger, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := openMetricsTarget(path, flags, 0o644)
	if err != nil {
		return nil, zerolog.Nop(), err
	}
	w := &metricsWriter{f: f, path: path}
	if tensorboard {
		if w.events, err = tfevents.Create(filepath.Dir(path), time.Now()); err != nil {
			f.Close()
			return nil, zerolog.Nop(), err
		}
	}
	return w, zerolog.New(w).With().Timestamp().Logger(), nil
}

// Close syncs and closes the file, returning the first error of the run's writes.
func (w *metricsWriter) Close() error {
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

// reportTo reads --report-to: which records a run keeps besides metrics.jsonl, which resuming
// needs and is always written.
func reportTo(v []string) (tensorboard bool, err error) {
	for _, r := range v {
		switch strings.TrimSpace(r) {
		case "tensorboard":
			tensorboard = true
		case "jsonl", "none":
		default:
			return false, fmt.Errorf("--report-to %q: want tensorboard, jsonl or none", r)
		}
	}
	return tensorboard, nil
}
