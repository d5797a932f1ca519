package fingerprint

import (
	"os"
	"path/filepath"
	"testing"
)

// A file is known by its size and SHA-256, a folder by its files' names and sizes, and the
// shards of a split by each one's name and fingerprint.
func TestFingerprints(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte("abc"), 0o644)
	os.WriteFile(b, []byte("abd"), 0o644)
	got, err := Data(a)
	if want := "file 3 bytes sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || got != want {
		t.Fatalf("Data(a) = %q, %v; want %q", got, err, want)
	}
	if one, err := Files([]string{a}); err != nil || one != got {
		t.Fatalf("Files of one file %q, %v; want its Data %q", one, err, got)
	}
	ab, _ := Files([]string{a, b})
	ba, _ := Files([]string{b, a})
	if ab == ba || ab[:len("files 2 sha256:")] != "files 2 sha256:" {
		t.Fatalf("shards: %q in order, %q reversed; want a files hash that depends on the order", ab, ba)
	}
	folder, err := Data(dir)
	if err != nil || folder[:len("folder 2 files 6 bytes")] != "folder 2 files 6 bytes" {
		t.Fatalf("Data(dir) = %q, %v", folder, err)
	}
	if _, err := Data(filepath.Join(dir, "none")); err == nil {
		t.Fatal("a missing file has a fingerprint")
	}
}
