package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The carried copy unpacks to the shared fixtures' own bytes (when they are there to compare),
// so tests read the same data in a fresh clone with nothing beside it.
func TestCarriedFixturesMatchTheShared(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	carried, err := CarriedFixtures(root)
	if err != nil {
		t.Fatal(err)
	}
	again, err := CarriedFixtures(root)
	if err != nil || again != carried {
		t.Fatalf("a second call gave %s (%v), want the same directory %s", again, err, carried)
	}
	shared := filepath.Join(filepath.Dir(root), "shared", "fixtures")
	n := 0
	err = filepath.WalkDir(carried, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(carried, path)
		want, err := os.ReadFile(filepath.Join(shared, rel))
		if os.IsNotExist(err) {
			return nil // no shared copy to compare with
		}
		if err != nil {
			return err
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the shared fixture: refresh testdata/fixtures", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(carried, "llama", "tokenizer", "tokenizer.json")); err != nil || n < 10 {
		t.Fatalf("the carried fixtures hold %d files and no unpacked tokenizer.json (%v)", n, err)
	}
}
