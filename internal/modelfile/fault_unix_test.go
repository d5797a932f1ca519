//go:build unix

package modelfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultReadRefusesWhatNoModelFileIs checks the files a hostile directory can hold in
// place of config.json end in an error naming the file, without reading them.
func TestFaultReadRefusesWhatNoModelFileIs(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop.json")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{big, "has 100 bytes, more than the 99"},
		{zero, "is a character device, not a regular file"},
		{loop, "too many levels of symbolic links"},
		{fifo, "is a named pipe, not a regular file"},
		{dir, "is a directory, not a regular file"},
	} {
		_, err := Read(c.path, 99)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%s) = %v, want an error naming it with %q", c.path, err, c.want)
		}
	}
}
