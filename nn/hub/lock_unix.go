//go:build unix

package hub

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockBlob holds an exclusive flock on path, the lock file huggingface_hub also takes, so that
// processes starting together (the ranks of a distributed job, say) download a blob once.
func lockBlob(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
