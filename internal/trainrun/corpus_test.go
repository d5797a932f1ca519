package trainrun

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/data"
)

func TestTokenCacheDir(t *testing.T) {
	if got, err := TokenCacheDir("/given"); got != "/given" || err != nil {
		t.Errorf("a given directory: %q, %v", got, err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory here: %v", err)
	}
	if got, err := TokenCacheDir(""); got != filepath.Join(base, "vkgrad", "tokens") || err != nil {
		t.Errorf("the default: %q, %v", got, err)
	}
}

// Load tokenises a folder with GPT-2's tokenizer, then reads the same tokens back from the
// cache, and says so in its log line.
func TestDataLoadThroughTheCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("Hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	d := Data{Path: dir, Ext: []string{".txt"}}
	var logged bytes.Buffer
	tokens, source, err := d.Load(cache, data.LoadOptions{}, zerolog.New(&logged))
	if err != nil {
		t.Fatal(err)
	}
	// GPT-2: <|endoftext|> before the document, then "Hello", " world", "\n".
	if want := []int32{50256, 15496, 995, 198}; !slices.Equal(tokens, want) || source != dir {
		t.Errorf("tokens %v from %s, want %v from %s", tokens, source, want, dir)
	}
	logged.Reset()
	again, _, err := d.Load(cache, data.LoadOptions{}, zerolog.New(&logged))
	if err != nil || !slices.Equal(again, tokens) || !strings.Contains(logged.String(), `"cache":"`+cache) {
		t.Errorf("from the cache: %v, %v; log %s", again, err, logged.String())
	}
	if _, _, err := (Data{Path: filepath.Join(dir, "missing")}).Load(cache, data.LoadOptions{}, zerolog.Nop()); err == nil || !strings.HasPrefix(err.Error(), "--data: ") {
		t.Errorf("missing data: %v", err)
	}
}
