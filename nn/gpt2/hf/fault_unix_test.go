//go:build unix

package hf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// TestFaultConfigBesideIsNotAFile: a config.json beside the weights that links to /dev/zero is
// refused by name instead of read until memory runs out.
func TestFaultConfigBesideIsNotAFile(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 5, VocabSize: 7, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 6}
	dir := t.TempDir()
	model := filepath.Join(dir, "model.safetensors")
	if err := Export(model, cfg, make([]float32, cfg.NumParams())); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	if err := os.Symlink("/dev/zero", config); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Import(model, ImportOptions{}); err == nil || !strings.Contains(err.Error(), config+" is a character device") {
		t.Errorf("Import with config.json linked to /dev/zero: %v", err)
	}
}
