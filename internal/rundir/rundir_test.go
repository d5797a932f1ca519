package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultNamesTheRunAndItsTime(t *testing.T) {
	got := Default("grpo-arith", time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	if want := filepath.Join("runs", "grpo-arith-20260304-050607"); got != want {
		t.Errorf("Default = %q, want %q", got, want)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := WriteConfig(dir, map[string]any{"command": "sft", "steps": 3}); err != nil {
		t.Fatal(err)
	}
	raw, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"command\": \"sft\",\n  \"steps\": 3\n}\n"; string(raw) != want {
		t.Errorf("config.json = %q, want %q", raw, want)
	}
	if _, err := ReadConfig(t.TempDir()); err == nil || !strings.Contains(err.Error(), Config) {
		t.Errorf("reading a missing config: %v", err)
	}
}

// TestOpenMetricsResumesOrStartsAfresh: a resume keeps the lines up to its step and appends; a
// new run starts the file empty.
func TestOpenMetricsResumesOrStartsAfresh(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, Metrics)
	old := `{"step":1,"loss":3}` + "\n" + `{"step":2,"loss":2}` + "\n" + `{"step":3,"loss":1}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	w, dropped, err := OpenMetrics(dir, true, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 1 {
		t.Errorf("dropped %d lines, want 1", dropped)
	}
	line, _ := json.Marshal(map[string]int{"step": 3, "loss": 0})
	if _, err := w.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := `{"step":1,"loss":3}` + "\n" + `{"step":2,"loss":2}` + "\n" + `{"loss":0,"step":3}` + "\n"; string(got) != want {
		t.Errorf("resumed metrics %q, want %q", got, want)
	}
	w, dropped, err = OpenMetrics(dir, false, 0, false)
	if err != nil || dropped != 0 {
		t.Fatalf("a new run's metrics: dropped %d, %v", dropped, err)
	}
	w.Close()
	if got, _ := os.ReadFile(path); len(got) != 0 {
		t.Errorf("a new run kept %q", got)
	}
}
