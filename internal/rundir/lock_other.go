//go:build !unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lock creates dir/.lock exclusively; a crash leaves it behind, to be removed by hand.
func lock(dir string) (*os.File, error) {
	path := filepath.Join(dir, Lock)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrExist) {
		b, _ := os.ReadFile(path)
		return nil, fmt.Errorf("--run-dir %s is in use (lock file %s, pid %s; remove it if that process is gone)", dir, path, b)
	}
	if err != nil {
		return nil, fmt.Errorf("--run-dir %s: %w", dir, err)
	}
	f.WriteString(strconv.Itoa(os.Getpid()))
	return f, nil
}

func unlock(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
