package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func TestExportRoundTrips(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	dir := t.TempDir()

	// A Llama-family directory re-exported in bfloat16 loads again.
	q2 := filepath.Join(root, "nn", "llama", "testdata", "qwen2-tiny")
	if err := run([]string{"export", "--model", q2, "--out", filepath.Join(dir, "q2"), "--dtype", "bfloat16"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if _, err := llama.Load(cpu.New(), filepath.Join(dir, "q2")); err != nil {
		t.Fatalf("exported Qwen2 does not load: %v", err)
	}
	if err := run([]string{"export", "--model", q2, "--format", "llmc", "--out", filepath.Join(dir, "x.bin")}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "qwen2") {
		t.Errorf("a Qwen2 model as llm.c: %v", err)
	}

	// GPT-2: llm.c file -> Hugging Face -> llm.c, the same parameters.
	llmcFile := filepath.Join(testutil.FixturesDir(t), "llmc", "tiny_ckpt.bin")
	want, err := load.Read(llmcFile)
	if err != nil {
		t.Fatal(err)
	}
	hfDir, back := filepath.Join(dir, "hf"), filepath.Join(dir, "back.bin")
	for _, args := range [][]string{
		{"export", "--model", llmcFile, "--out", hfDir},
		{"export", "--model", filepath.Join(hfDir, "model.safetensors"), "--format", "llmc", "--out", back},
	} {
		if err := run(args, &out, &errOut); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	got, err := load.Read(back)
	if err != nil {
		t.Fatal(err)
	}
	if got.Config != want.Config || !slices.Equal(got.Params, want.Params) {
		t.Errorf("GPT-2 through Hugging Face and back changed: %v vs %v", got.Config, want.Config)
	}
	if _, err := os.Stat(filepath.Join(hfDir, "config.json")); err != nil {
		t.Error(err)
	}
}
