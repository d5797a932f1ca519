package checkpoint

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// TestFaultLlamaConfigIsCheckedAgainstTheTensors edits a Llama checkpoint's metadata to claim a
// billion layers: it is refused, naming the field and the layers present, before the list of
// parameters that many layers would have is made.
func TestFaultLlamaConfigIsCheckedAgainstTheTensors(t *testing.T) {
	cfg, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Layers = 2
	st := &State{Llama: &cfg, Params: make([]float32, cfg.NumParams())}
	if err := Save(filepath.Join(t.TempDir(), "ok.safetensors"), st); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ edit, want string }{
		{`"Layers":2`, "num_hidden_layers is 1000000000, but the weights hold 2 layers"},
		{`"Hidden":`, "hidden_size is 1000000000"},
	} {
		bad := writeEdited(t, st, func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			doc := m[MetadataKey]
			if !strings.Contains(doc, c.edit) {
				t.Fatalf("metadata %s has no %s", doc, c.edit)
			}
			field, _, _ := strings.Cut(c.edit, ":")
			i := strings.Index(doc, field+":") + len(field) + 1
			j := i + strings.IndexAny(doc[i:], ",}")
			return ts, map[string]string{MetadataKey: doc[:i] + "1000000000" + doc[j:]}
		})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(bad)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s edited: %v, want an error naming the file with %q", c.edit, err, c.want)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
			t.Errorf("%s edited: allocated %d MiB before refusing", c.edit, grown>>20)
		}
	}
}
