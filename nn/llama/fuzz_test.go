package llama

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadConfig: any config.json gives a config that validates, or an error.
func FuzzReadConfig(f *testing.F) {
	for _, d := range []string{"qwen3-tiny", "llama3-tiny", "qwen2-tiny"} {
		b, err := os.ReadFile(filepath.Join("testdata", d, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
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
		c.Shapes()
		c.InvFreq()
	})
}
