package trainrun

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/nn/data"
)

// Data says where training text comes from (--data, --ext, --max-bytes); it is saved with the
// run, so --resume reloads the same tokens and eval can check them.
type Data struct {
	Path     string   `json:"path"`
	Ext      []string `json:"ext"`
	MaxBytes int64    `json:"max_bytes"`
	// Fingerprint identifies the data read, so eval can refuse data that changed since training.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// TokenCacheDir is where tokenised corpora are cached: dir when given, else vkgrad's folder in
// the user cache directory (not the working directory, which may be read-only).
func TokenCacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory (%v): pass --cache-dir", err)
	}
	return filepath.Join(base, "vkgrad", "tokens"), nil
}

// Load tokenises the data (the Go standard library sources when Path is empty) with tok's
// tokenizer (GPT-2's when it names none), through the token cache in cacheDir, showing the
// tokenisation's progress on stderr. It returns the tokens and the path they were read from.
func (d Data) Load(cacheDir string, tok data.LoadOptions, log zerolog.Logger) ([]int32, string, error) {
	var src data.TextSource
	if d.Path == "" {
		maxBytes := d.MaxBytes
		if maxBytes == 0 {
			maxBytes = data.DefaultGoSourceBytes
		}
		s, err := data.GoSourceCorpus(maxBytes)
		if err != nil {
			return nil, "", fmt.Errorf("default corpus: %w (pass --data)", err)
		}
		src = s
		log.Info().Str("path", src.Path).Str("max_bytes", logfmt.Count(int(maxBytes))).Msg("corpus: the Go standard library sources")
	} else {
		src = data.TextSource{Path: d.Path, Extensions: d.Ext, MaxBytes: d.MaxBytes}
	}
	bar := (*progress.Bar)(nil)
	opt := tok
	opt.CacheDir = cacheDir
	opt.Progress = func(done, total int64) {
		if bar == nil {
			bar = progress.New(os.Stderr, int(total))
		}
		bar.Update(int(done), "tokenising")
	}
	corpus, err := data.LoadCorpus(src, opt)
	if err != nil {
		return nil, "", fmt.Errorf("--data: %w", err)
	}
	ev := log.Info().Str("tokens", logfmt.Count(len(corpus.Tokens))).Int("files", len(corpus.Files))
	if corpus.FromCache {
		ev = ev.Str("cache", corpus.CachePath)
	}
	ev.Msg("corpus loaded")
	if n := len(corpus.Skipped); n > 0 {
		log.Warn().Int("files", n).Strs("first", corpus.Skipped[:min(n, 5)]).Msg("skipped files that are binary or not UTF-8")
	}
	return corpus.Tokens, src.Path, nil
}
