package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/internal/rundir"
)

// HFModelType is the model_type of path/config.json when path is a Hugging Face model
// directory, "" when it is not one: a file, a run directory (it holds checkpoint.safetensors),
// a directory without config.json, or one whose config.json names no model_type beside no
// weights. A config.json that cannot be read, is not JSON, or names no model_type beside
// model.safetensors is an error naming it: such a directory is no GPT-2 either.
func HFModelType(path string) (string, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return "", nil
	}
	if exists(filepath.Join(path, rundir.Checkpoint)) {
		return "", nil
	}
	cpath := filepath.Join(path, "config.json")
	if _, err := os.Lstat(cpath); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	b, err := modelfile.Read(cpath, modelfile.Config)
	if err != nil {
		return "", err
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", cpath, err)
	}
	if c.ModelType == "" {
		if !exists(filepath.Join(path, "model.safetensors")) && !exists(filepath.Join(path, "model.safetensors.index.json")) {
			return "", nil
		}
		return "", fmt.Errorf("%s has no model_type, so the model's architecture is unknown (vkgrad reads gpt2, llama, qwen2 and qwen3)", cpath)
	}
	return c.ModelType, nil
}

// IsLlamaDir reports whether path is a Llama-family Hugging Face model directory, which
// llama.Load reads (a GPT-2's is read by [Read]); errors are [HFModelType]'s.
func IsLlamaDir(path string) (bool, error) {
	t, err := HFModelType(path)
	return t != "" && t != "gpt2", err
}

// HFDirOfRun returns the Hugging Face directory a run directory (or its checkpoint) was
// started from, as the run's config.json records it in "hf_dir"; "" when it records none (a
// GPT-2's run) or cannot be read.
func HFDirOfRun(path string) string {
	p, err := Resolve(path)
	if err != nil {
		return ""
	}
	raw, err := rundir.ReadConfig(filepath.Dir(p))
	if err != nil {
		return ""
	}
	var meta struct {
		HFDir string `json:"hf_dir"`
	}
	if json.Unmarshal(raw, &meta) != nil {
		return ""
	}
	return meta.HFDir
}

// exists reports whether path names anything, a dangling link included.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
