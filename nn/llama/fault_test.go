package llama

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// copyModelDir copies a fixture model directory into a temporary one, with config.json's text
// edited by the old/new pairs given.
func copyModelDir(t *testing.T, src string, edits ...string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.json" {
			for i := 0; i < len(edits); i += 2 {
				edited := strings.Replace(string(b), edits[i], edits[i+1], 1)
				if edited == string(b) {
					t.Fatalf("edit %q did not apply", edits[i])
				}
				b = []byte(edited)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFaultConfigIsCheckedAgainstTheWeights gives config.json sizes its weights do not have:
// each is refused before anything the config sizes is made (a billion layers within a few MiB
// of memory), naming config.json, the field and the tensor.
func TestFaultConfigIsCheckedAgainstTheWeights(t *testing.T) {
	for _, c := range []struct {
		edit  [2]string
		wants []string
	}{
		{[2]string{`"num_hidden_layers": 2`, `"num_hidden_layers": 1000000000`}, []string{"num_hidden_layers is 1000000000", "hold 2 layers", "model.layers.2.*"}},
		{[2]string{`"num_hidden_layers": 2`, `"num_hidden_layers": 1`}, []string{"num_hidden_layers is 1", "model.layers.1."}},
		{[2]string{`"hidden_size": 64`, `"hidden_size": 4096`}, []string{"hidden_size is 4096", "model.embed_tokens.weight", "[384 64]"}},
		{[2]string{`"vocab_size": 384`, `"vocab_size": 1000000000`}, []string{"vocab_size is 1000000000", "model.embed_tokens.weight"}},
		{[2]string{`"num_attention_heads": 4`, `"num_attention_heads": 8`}, []string{"num_attention_heads 8 × head_dim 16", "q_proj"}},
		{[2]string{`"num_key_value_heads": 2`, `"num_key_value_heads": 4`}, []string{"num_key_value_heads 4", "k_proj"}},
		{[2]string{`"intermediate_size": 160`, `"intermediate_size": 1000000000`}, []string{"intermediate_size is 1000000000", "mlp.gate_proj.weight"}},
	} {
		dir := copyModelDir(t, "testdata/qwen3-tiny", c.edit[0], c.edit[1])
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(cpu.New(), dir)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: loaded", c.edit[1])
			continue
		}
		for _, w := range append(c.wants, filepath.Join(dir, "config.json")) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to contain %q", c.edit[1], err, w)
			}
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
			t.Errorf("%s: allocated %d MiB before refusing", c.edit[1], grown>>20)
		}
	}
}

// TestFaultModelFilesThatAreNotFiles replaces config.json and generation_config.json by a link
// to /dev/zero and by a link loop: each is refused by name, never read without end.
func TestFaultModelFilesThatAreNotFiles(t *testing.T) {
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		for target, want := range map[string]string{"/dev/zero": "is a character device, not a regular file", "": "too many levels of symbolic links"} {
			dir := copyModelDir(t, "testdata/qwen3-tiny")
			p := filepath.Join(dir, name)
			if target == "" {
				target = p
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Skip(err)
			}
			_, err := Load(cpu.New(), dir)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s linked to %s: %v, want an error naming it with %q", name, target, err, want)
			}
		}
	}
	dir := copyModelDir(t, "testdata/qwen3-tiny", `"rope_scaling": null,`, `"rope_scaling": null, "pad": "`+strings.Repeat("x", 5<<20)+`",`)
	if _, err := Load(cpu.New(), dir); err == nil || !strings.Contains(err.Error(), "more than the 4194304") {
		t.Errorf("config.json of 5 MiB: %v", err)
	}
}
