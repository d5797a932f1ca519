//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lock takes an exclusive flock on dir/.lock, which the kernel releases if the process
// dies, and writes the holder's pid into it for the error another process gets.
func lock(dir string) (*os.File, error) {
	path := filepath.Join(dir, Lock)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--run-dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(holder); perr != nil || holder == "" {
				holder = "another process"
			} else {
				holder = "process " + holder
			}
			return nil, fmt.Errorf("--run-dir %s is in use by %s: one run per directory", dir, holder)
		}
		return nil, fmt.Errorf("--run-dir %s: locking: %w", dir, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// unlock releases the lock; the file stays (removing it would race with a process
// about to lock it).
func unlock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
