//go:build unix

package safetensors

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultOpenRefusesWhatIsNotAFile: a link to /dev/zero and a named pipe are refused by name
// (the pipe without blocking on its open).
func TestFaultOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.safetensors")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{zero: "is a character device, not a regular file", fifo: "is a named pipe, not a regular file"} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want an error naming it with %q", path, err, want)
		}
	}
}
