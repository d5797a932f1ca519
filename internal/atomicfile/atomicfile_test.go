//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// withUmask runs f under umask mask (process-wide: these tests are not parallel).
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

func TestFaultWriteRespectsUmask(t *testing.T) {
	for _, c := range []struct {
		umask      int
		perm, want fs.FileMode
	}{{0o077, 0o666, 0o600}, {0o022, 0o666, 0o644}, {0o002, 0o666, 0o664}, {0o022, 0o600, 0o600}} {
		p := filepath.Join(t.TempDir(), "f.json")
		var err error
		withUmask(c.umask, func() { err = WriteFile(p, []byte("{}"), c.perm) })
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.want {
			t.Errorf("umask %o, perm %o: mode %o, want %o", c.umask, c.perm, fi.Mode().Perm(), c.want)
		}
	}
}

func TestFaultFailedWriteLeavesTargetAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := WriteFile(p, []byte("old"), 0o666); err != nil {
		t.Fatal(err)
	}
	err := Write(p, 0o666, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("injected: disk full")
	})
	if err == nil || err.Error() != "injected: disk full" {
		t.Fatalf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target holds %q after a failed write", b)
	}
	if names := list(t, dir); !slices.Equal(names, []string{"config.json"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestRemoveStaleOnlyOwnTemporaries: a user's files that look like temporaries, and
// temporaries of files not named, stay.
func TestRemoveStaleOnlyOwnTemporaries(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"config.json.tmp", "metrics.jsonl.tmp", ".notes.tmp-1", ".checkpoint.safetensors.tmp-123",
		".other.json.vkgrad-tmp-1", "config.json"}
	stale := []string{".config.json.vkgrad-tmp-abc", ".checkpoint.safetensors.vkgrad-tmp-9z"}
	for _, n := range append(slices.Clone(keep), stale...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A real temporary has the pattern's form.
	f, err := create(dir, "config.json", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ok, _ := filepath.Match(TempPattern("config.json"), filepath.Base(f.Name())); !ok {
		t.Fatalf("temporary %s does not match %s", f.Name(), TempPattern("config.json"))
	}
	RemoveStale(dir, "config.json", "checkpoint.safetensors")
	slices.Sort(keep)
	if names := list(t, dir); !slices.Equal(names, keep) {
		t.Errorf("after RemoveStale: %v, want %v", names, keep)
	}
}

func list(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
