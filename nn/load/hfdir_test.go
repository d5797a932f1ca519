package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles makes dir with the named files and contents.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestHFModelTypeTellsModelDirectoriesFromOthers(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(writeFiles(t, filepath.Join(root, "f"), map[string]string{"x.bin": "x"}), "x.bin")
	for _, c := range []struct {
		name, path, want, err string
	}{
		{"qwen3", writeFiles(t, filepath.Join(root, "qwen3"), map[string]string{"config.json": `{"model_type":"qwen3"}`}), "qwen3", ""},
		{"gpt2", writeFiles(t, filepath.Join(root, "gpt2"), map[string]string{"config.json": `{"model_type":"gpt2"}`}), "gpt2", ""},
		{"a file", file, "", ""},
		{"missing", filepath.Join(root, "missing"), "", ""},
		{"a run directory", writeFiles(t, filepath.Join(root, "run"), map[string]string{"config.json": `{"model_type":"llama"}`, RunCheckpoint: ""}), "", ""},
		{"no config.json", writeFiles(t, filepath.Join(root, "empty"), nil), "", ""},
		{"no model_type, no weights", writeFiles(t, filepath.Join(root, "other"), map[string]string{"config.json": `{}`}), "", ""},
		{"no model_type beside weights", writeFiles(t, filepath.Join(root, "notype"), map[string]string{"config.json": `{}`, "model.safetensors": ""}), "", "has no model_type"},
		{"not JSON", writeFiles(t, filepath.Join(root, "bad"), map[string]string{"config.json": `{"model_type":`}), "", "is not valid JSON"},
	} {
		got, err := HFModelType(c.path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), filepath.Join(c.path, "config.json")) {
				t.Errorf("%s: error %v, want one naming its config.json with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: HFModelType = %q, %v; want %q", c.name, got, err, c.want)
		}
		isLlama, _ := IsLlamaDir(c.path)
		if want := c.want != "" && c.want != "gpt2"; isLlama != want {
			t.Errorf("%s: IsLlamaDir = %v, want %v", c.name, isLlama, want)
		}
	}
}

func TestHFDirOfRunReadsTheRunsConfig(t *testing.T) {
	root := t.TempDir()
	run := writeFiles(t, filepath.Join(root, "run"), map[string]string{"config.json": `{"command":"grpo","hf_dir":"/models/qwen3"}`, RunCheckpoint: "x"})
	for _, path := range []string{run, filepath.Join(run, RunCheckpoint)} {
		if got := HFDirOfRun(path); got != "/models/qwen3" {
			t.Errorf("HFDirOfRun(%s) = %q, want /models/qwen3", path, got)
		}
	}
	gpt2Run := writeFiles(t, filepath.Join(root, "gpt2run"), map[string]string{"config.json": `{"command":"train"}`, RunCheckpoint: "x"})
	noConfig := writeFiles(t, filepath.Join(root, "bare"), map[string]string{RunCheckpoint: "x"})
	badConfig := writeFiles(t, filepath.Join(root, "bad"), map[string]string{"config.json": `{`, RunCheckpoint: "x"})
	for _, path := range []string{gpt2Run, noConfig, badConfig, filepath.Join(root, "missing")} {
		if got := HFDirOfRun(path); got != "" {
			t.Errorf("HFDirOfRun(%s) = %q, want none", path, got)
		}
	}
}
