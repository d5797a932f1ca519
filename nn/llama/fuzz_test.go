package llama

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// FuzzReadConfig: any config.json gives a config that validates, or an error; one that passes
// CheckTensors against qwen3-tiny's weights lists exactly those tensors, so whatever sizes it
// claims never reach an allocation.
func FuzzReadConfig(f *testing.F) {
	for _, d := range []string{"qwen3-tiny", "llama3-tiny", "qwen2-tiny"} {
		b, err := os.ReadFile(filepath.Join("testdata", d, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if d == "qwen3-tiny" {
			f.Add([]byte(strings.Replace(string(b), `"num_hidden_layers": 2`, `"num_hidden_layers": 1000000000`, 1)))
			f.Add([]byte(strings.Replace(string(b), `"vocab_size": 384`, `"vocab_size": 9223372036854775807`, 1)))
			f.Add([]byte(strings.Replace(string(b), `"head_dim": 16`, `"head_dim": 4611686018427387904`, 1)))
		}
	}
	sf, err := safetensors.Open("testdata/qwen3-tiny/model.safetensors")
	if err != nil {
		f.Fatal(err)
	}
	defer sf.Close()
	shapes := headerShapes([]*safetensors.File{sf})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
		c, err := ReadConfig(dir)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a config that does not validate: %v", err)
		}
		if c.CheckTensors(shapes) != nil {
			return
		}
		c.InvFreq()
		want := c.Shapes()
		for name, s := range want {
			if got, ok := shapes[name]; ok && len(got) != len(s) {
				t.Fatalf("tensor %s: config implies %v, the file has %v", name, s, got)
			}
		}
		if len(want) > len(shapes)+1 { // lm_head.weight when untied
			t.Fatalf("CheckTensors passed a config of %d tensors over a file of %d", len(want), len(shapes))
		}
	})
}
