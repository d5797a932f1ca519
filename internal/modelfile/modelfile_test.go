package modelfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadGivesTheContents(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Read(p, 8)
	if err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("Read = %q, %v", b, err)
	}
}
