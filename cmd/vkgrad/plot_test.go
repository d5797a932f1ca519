package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestFaultPlotExtremeValues: values whose span overflows float64 (they used to hang the axis)
// and NaN written as a string still give a picture.
func TestFaultPlotExtremeValues(t *testing.T) {
	dir := t.TempDir()
	lines := `{"step":1,"loss":1e308}` + "\n" + `{"step":2,"loss":-1e308}` + "\n" + `{"step":3,"loss":"NaN"}` + "\n" + `{"step":4,"loss":2}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "x.png")
	var stdout, errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run([]string{"plot", dir, "--out", out}, &stdout, &errOut) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("plot: %v\n%s", err, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("plot did not finish in a minute")
	}
	if st, err := os.Stat(out); err != nil || st.Size() < 1000 {
		t.Fatalf("picture %s: %v", out, err)
	}
}
