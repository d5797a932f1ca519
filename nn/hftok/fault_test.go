package hftok

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultTokenizerFilesThatAreNotFiles links tokenizer.json and tokenizer_config.json to
// /dev/zero and to themselves: each is refused by name instead of read until memory runs out.
func TestFaultTokenizerFilesThatAreNotFiles(t *testing.T) {
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		for target, want := range map[string]string{"/dev/zero": "is a character device, not a regular file", "": "too many levels of symbolic links"} {
			dir := t.TempDir()
			p := filepath.Join(dir, name)
			if target == "" {
				target = p
			}
			if err := os.Symlink(target, p); err != nil {
				t.Skip(err)
			}
			var err error
			if name == "tokenizer.json" {
				_, err = Load(dir)
			} else {
				_, err = LoadTemplate(dir)
			}
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s linked to %s: %v, want an error naming it with %q", name, target, err, want)
			}
		}
	}
}
