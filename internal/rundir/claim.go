package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
)

// Held is a run directory this process owns for the run's life: a lock file, held with
// flock where the platform has it, keeps a second process out.
type Held struct {
	path    string
	lock    *os.File
	created bool            // the directory did not exist before
	had     map[string]bool // run files present before this run
}

// Claim takes dir for a run. A directory that already holds a run is refused unless the
// run is resumed (resume) or replaced (overwrite); another process using it is refused too.
// Temporary files a crash left there are removed. A replaced run's files are moved aside, and
// come back if this run ends before its first checkpoint.
func Claim(dir string, resume, overwrite bool) (*Held, error) {
	h := &Held{path: dir, had: map[string]bool{}}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		h.created = true
	}
	if err := refuseRun(dir, resume, overwrite); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--run-dir: %w", err)
	}
	lock, err := lock(dir)
	if err != nil {
		h.removeIfEmpty()
		return nil, err
	}
	h.lock = lock
	restoreReplaced(dir)
	if err := refuseRun(dir, resume, overwrite); err != nil { // the run restored may be one
		h.Release(false)
		return nil, err
	}
	removeStaleTemporaries(dir)
	if overwrite && !resume {
		if err := moveAside(dir); err != nil {
			h.Release(false)
			return nil, err
		}
	}
	for _, f := range Existing(dir) {
		h.had[f] = true
	}
	for _, f := range EventFiles(dir) {
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
	if found := Existing(dir); len(found) > 0 {
		return fmt.Errorf("--run-dir %s already holds a run (%s): continue it with --resume %s, or pass --overwrite to replace it",
			dir, strings.Join(found, ", "), dir)
	}
	return nil
}

// replacedFiles are the files of a run that --overwrite replaces: moved aside as
// ".<name>.vkgrad-replaced" until the replacing run saves its first checkpoint.
var replacedFiles = append(slices.Clone(runFiles), Completions)

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
	if _, err := os.Stat(filepath.Join(dir, Checkpoint)); err == nil {
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

// RestoreReplacedAt runs restoreReplaced on the run directory at path (the directory, or a
// file in it) unless another process holds it: a resume reads the checkpoint before it claims
// the directory.
func RestoreReplacedAt(path string) {
	dir := path
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	if m, _ := filepath.Glob(replacedName(dir, "*")); len(m) == 0 {
		return
	}
	lock, err := lock(dir)
	if err != nil {
		return
	}
	defer unlock(lock)
	restoreReplaced(dir)
}

// dropReplaced deletes the files of the run that was replaced.
func dropReplaced(dir string) {
	for _, f := range replacedFiles {
		os.Remove(replacedName(dir, f))
	}
}

// Saved is told of each checkpoint the run writes: from the first on, the run it replaced is
// gone for good.
func (h *Held) Saved() {
	if h != nil {
		dropReplaced(h.path)
	}
}

// EventFiles lists the TensorBoard event files in dir, by name.
func EventFiles(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	for i, m := range matches {
		matches[i] = filepath.Base(m)
	}
	return matches
}

// Existing lists the run files dir holds, by name.
func Existing(dir string) []string {
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

// Release gives the directory up. A run that failed before saving a checkpoint leaves nothing
// behind: the files it created (and the directory, if it made it) go, and a run it was
// replacing comes back.
func (h *Held) Release(failed bool) {
	if h == nil || h.lock == nil {
		return
	}
	_, err := os.Stat(filepath.Join(h.path, Checkpoint))
	saved := err == nil && !h.had[Checkpoint]
	switch {
	case saved || !failed: // a failed run that made progress is kept to resume
		dropReplaced(h.path)
	default:
		for _, f := range append(append([]string{}, runFiles...), EventFiles(h.path)...) {
			if !h.had[f] {
				os.Remove(filepath.Join(h.path, f))
			}
		}
		restoreReplaced(h.path)
	}
	unlock(h.lock)
	h.lock = nil
	if failed && !saved {
		h.removeIfEmpty()
	}
}

// removeIfEmpty deletes the directory when this run created it and nothing else is in it.
func (h *Held) removeIfEmpty() {
	if !h.created {
		return
	}
	entries, err := os.ReadDir(h.path)
	if err == nil && (len(entries) == 0 || len(entries) == 1 && entries[0].Name() == Lock) {
		os.Remove(filepath.Join(h.path, Lock))
		os.Remove(h.path)
	}
}
