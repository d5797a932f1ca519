package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// SeedFile adds to f's corpus the bytes of the file write makes, for fuzzing readers that take
// paths.
func SeedFile(f *testing.F, write func(path string) error) {
	f.Helper()
	p := filepath.Join(f.TempDir(), "seed")
	if err := write(p); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// FileOf writes b to a temporary file and returns its path, for readers that take paths.
func FileOf(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
