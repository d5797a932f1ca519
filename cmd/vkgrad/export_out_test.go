//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultExportNeverWritesOverAModel: --out that is the model's own directory, another run,
// or a folder holding files export would write over that are not an export's, is refused by
// name and left as it was; an earlier export is replaced as asked.
func TestFaultExportNeverWritesOverAModel(t *testing.T) {
	tmp := t.TempDir()
	run, other := filepath.Join(tmp, "run"), filepath.Join(tmp, "other")
	for _, d := range []string{run, other} {
		if out, err := runCLI(trainArgs(t, d)...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	config, _ := os.ReadFile(filepath.Join(run, "config.json"))
	users := filepath.Join(tmp, "users")
	os.Mkdir(users, 0o755)
	os.WriteFile(filepath.Join(users, "config.json"), []byte(`{"learning_rate": 0.1}`), 0o644)
	notes := filepath.Join(tmp, "notes.txt")
	os.WriteFile(notes, []byte("my notes"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", run, "--out", run}, "is the model's own directory"},
		{[]string{"--model", filepath.Join(run, "checkpoint.safetensors"), "--out", run + "/"}, "is the model's own directory"},
		{[]string{"--model", run, "--out", other}, "holds a vkgrad run"},
		{[]string{"--model", run, "--out", users}, "config.json that is not a Hugging Face model's"},
		{[]string{"--model", run, "--out", notes}, "is a file"},
		{[]string{"--model", run, "--format", "llmc", "--out", notes}, "is not an llm.c checkpoint"},
		{[]string{"--model", run, "--format", "llmc", "--out", run}, "is a directory"},
	} {
		_, err := runCLI(append([]string{"export"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), "--out") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("export %v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(run, "config.json")); string(now) != string(config) {
		t.Fatal("a refused export changed the run's config.json")
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes" {
		t.Fatal("a refused export changed the user's file")
	}
	if out, err := runCLI("train", "--resume", run, "--steps", "3", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("resume after the refused exports: %v\n%s", err, out)
	}
	// Exporting again over an earlier export, and an llm.c file over an llm.c file, is fine;
	// the llm.c file is not written over itself.
	hfOut, bin := filepath.Join(tmp, "hf"), filepath.Join(tmp, "m.bin")
	if out, err := runCLI("export", "--model", filepath.Join(run, "checkpoint.safetensors"), "--out", tmp); err != nil {
		t.Fatalf("export beside the run's folder: %v\n%s", err, out)
	}
	for range 2 {
		for _, args := range [][]string{{"--model", run, "--out", hfOut}, {"--model", run, "--format", "llmc", "--out", bin}} {
			if out, err := runCLI(append([]string{"export"}, args...)...); err != nil {
				t.Fatalf("export %v: %v\n%s", args, err, out)
			}
		}
	}
	if _, err := runCLI("export", "--model", bin, "--format", "llmc", "--out", bin); err == nil || !strings.Contains(err.Error(), "is the model itself") {
		t.Errorf("export of an llm.c file over itself: %v", err)
	}
}
