package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotWritesBesideTheRun(t *testing.T) {
	dir := t.TempDir()
	lines := `{"kind":"train","step":1,"loss":3}` + "\n" + `{"kind":"train","step":2,"loss":2.5}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"plot", dir}, &out, &errOut); err != nil {
		t.Fatalf("plot: %v\n%s", err, errOut.String())
	}
	want := filepath.Join(dir, "curves.png")
	if !strings.Contains(out.String(), want) {
		t.Errorf("output %q should say where the picture is (%s)", out.String(), want)
	}
	if st, err := os.Stat(want); err != nil || st.Size() < 1000 {
		t.Fatalf("picture %s: %v", want, err)
	}
	if err := run([]string{"plot"}, &out, &errOut); err == nil {
		t.Error("plot without a run should fail")
	}
}
