package rundir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTrimMetrics: a resume drops the lines of steps after the checkpoint's and a torn last
// line, and keeps the lines that belong to no step; a file with nothing to drop is left as it
// is, and a missing one is fine.
func TestTrimMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), Metrics)
	lines := `{"kind":"config","lr":0.1}
{"step":1,"loss":2}
{"step":2,"loss":1.5}
{"step":3,"loss":1.2}
{"kind":"eval","step":3,"accuracy":0.5}
{"step":4,"lo`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	dropped, err := TrimMetrics(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "{\"kind\":\"config\",\"lr\":0.1}\n{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1.5}\n"
	if dropped != 3 || string(got) != want {
		t.Errorf("dropped %d, kept %q; want 3 and %q", dropped, got, want)
	}
	if dropped, err := TrimMetrics(path, 2); dropped != 0 || err != nil {
		t.Errorf("a second trim dropped %d (%v)", dropped, err)
	}
	if _, err := TrimMetrics(filepath.Join(t.TempDir(), "none.jsonl"), 1); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}
