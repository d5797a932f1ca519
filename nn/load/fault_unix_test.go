//go:build unix

package load

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultReadRefusesWhatIsNotAFile: a model given as a link to /dev/zero, as a named pipe, or
// a directory whose model.safetensors is one, is refused by name without reading or blocking.
func TestFaultReadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.bin")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.bin")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	hfDir := filepath.Join(dir, "hf")
	if err := os.Mkdir(hfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inDir := filepath.Join(hfDir, "model.safetensors")
	if err := os.Symlink("/dev/zero", inDir); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		zero:  zero + " is a character device",
		fifo:  fifo + " is a named pipe",
		hfDir: inDir + " is a character device",
	} {
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want an error with %q", path, err, want)
		}
	}
}
