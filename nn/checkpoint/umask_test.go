//go:build unix

package checkpoint

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A checkpoint is created like any file the user's process writes: a umask of 077 keeps it
// private.
func TestFaultSaveRespectsUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "ckpt.safetensors")
	if err := Save(p, randomState(1, false)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o under umask 077, want 600", fi.Mode().Perm())
	}
}
