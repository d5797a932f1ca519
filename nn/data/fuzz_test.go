package data

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// FuzzReadTokenFile: any bytes give tokens, or an error; what is read writes back the same.
func FuzzReadTokenFile(f *testing.F) {
	testutil.SeedFile(f, func(p string) error { return WriteTokenFile(p, []int32{50256, 1, 2, 3, 65535}) })
	f.Fuzz(func(t *testing.T, b []byte) {
		toks, err := ReadTokenFile(testutil.FileOf(t, b))
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
