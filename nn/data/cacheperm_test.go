//go:build unix

package data

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The token cache holds a copy of the text: it is never more readable than the least
// readable file it came from, and never more than the umask allows.
func TestFaultTokenCacheNoMoreReadableThanItsSource(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, c := range []struct {
		modes []os.FileMode
		want  os.FileMode
	}{{[]os.FileMode{0o600}, 0o600}, {[]os.FileMode{0o644, 0o640}, 0o640}, {[]os.FileMode{0o666}, 0o644}} {
		root, cache := t.TempDir(), filepath.Join(t.TempDir(), "cache")
		for i, m := range c.modes {
			p := filepath.Join(root, string(rune('a'+i))+".txt")
			if err := os.WriteFile(p, []byte("private words\n"), m); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, m)
		}
		if _, err := (TextSource{Path: root}).Load(LoadOptions{CacheDir: cache}); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(cache)
		if err != nil || len(entries) != 2 {
			t.Fatalf("cache holds %v (%v), want the token file and its description", entries, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("temporary %s left in the cache", e.Name())
			}
			fi, _ := e.Info()
			if fi.Mode().Perm() != c.want {
				t.Errorf("sources %o: cache file %s has mode %o, want %o", c.modes, e.Name(), fi.Mode().Perm(), c.want)
			}
		}
	}
}

func TestFaultTokenFileRespectsUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "t.bin")
	if err := WriteTokenFile(p, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file under umask 077: %v %v, want mode 600", fi.Mode(), err)
	}
}
