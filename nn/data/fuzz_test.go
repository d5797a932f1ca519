package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzReadTokenFile: any bytes give tokens, or an error; what is read writes back the same.
func FuzzReadTokenFile(f *testing.F) {
	p := filepath.Join(f.TempDir(), "seed.bin")
	if err := WriteTokenFile(p, []int32{50256, 1, 2, 3, 65535}); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(p)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := filepath.Join(t.TempDir(), "in.bin")
		os.WriteFile(in, b, 0o644)
		toks, err := ReadTokenFile(in)
		if err != nil {
			return
		}
		out := filepath.Join(t.TempDir(), "out.bin")
		if err := WriteTokenFile(out, toks); err != nil {
			t.Fatalf("tokens read from a file do not write back: %v", err)
		}
		again, err := ReadTokenFile(out)
		if err != nil || !slices.Equal(again, toks) {
			t.Fatalf("round trip changed the tokens: %v", err)
		}
	})
}
