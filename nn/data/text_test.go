package data

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func gpt2(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// corpusFiles is a small tree with every kind of entry List must handle.
var corpusFiles = map[string]string{
	"b.txt":              "second file\nwith two lines\n",
	"a.txt":              "Hello world",
	"sub/c.txt":          "nested héllo 日本語\n",
	"sub/d.go":           "package d\n",
	"UPPER.TXT":          "shouting\n",
	".hidden/e.txt":      "hidden folder\n",
	".f.txt":             "hidden file\n",
	"testdata/g.txt":     "skipped folder\n",
	"bin.txt":            "binary\x00data",
	"latin1.txt":         "caf\xe9\n",
	"sub/deeper/h.txt":   "deep\n",
	"sub/deeper/i.other": "other extension\n",
}

func TestListFilters(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, corpusFiles)
	files, err := TextSource{Path: root, Extensions: []string{"txt"}, SkipDirs: []string{"testdata"}}.List()
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, f := range files {
		rels = append(rels, f.Rel)
		if f.Size != int64(len(corpusFiles[f.Rel])) {
			t.Errorf("%s: size %d, want %d", f.Rel, f.Size, len(corpusFiles[f.Rel]))
		}
	}
	want := []string{"UPPER.TXT", "a.txt", "b.txt", "bin.txt", "latin1.txt", "sub/c.txt", "sub/deeper/h.txt"}
	if !slices.Equal(rels, want) {
		t.Fatalf("List = %q, want %q", rels, want)
	}
	// No filter: every non-hidden file, including testdata when not skipped.
	files, err = TextSource{Path: root}.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 10 {
		t.Fatalf("unfiltered List has %d files, want 10", len(files))
	}
	// A single file is taken whatever its extension.
	files, err = TextSource{Path: filepath.Join(root, "sub", "d.go"), Extensions: []string{".txt"}}.List()
	if err != nil || len(files) != 1 || files[0].Rel != "d.go" {
		t.Fatalf("single file: %v %v", files, err)
	}
}

func TestListErrors(t *testing.T) {
	empty := t.TempDir()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "x"})
	for _, c := range []struct {
		src  TextSource
		want string
	}{
		{TextSource{Path: empty}, empty + ": no files"},
		{TextSource{Path: root, Extensions: []string{".go", ".md"}}, root + ": no files ending in .go, .md"},
		{TextSource{Path: filepath.Join(root, "nope")}, filepath.Join(root, "nope")},
		{TextSource{}, "no path"},
		{TextSource{Path: root, Extensions: []string{""}}, "empty entry in the extension filter"},
		{TextSource{Path: root, MaxBytes: -1}, "max bytes -1"},
	} {
		_, err := c.src.List()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.src, err, c.want)
		}
	}
	// A folder whose only files are binary has no text.
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{"x.bin": "\x00\x01"})
	if _, err := (TextSource{Path: bin}).Load(LoadOptions{}); err == nil || !strings.Contains(err.Error(), bin) || !strings.Contains(err.Error(), "1 skipped as binary") {
		t.Errorf("binary-only folder: %v", err)
	}
}

func TestLoadTokens(t *testing.T) {
	tok := gpt2(t)
	root := t.TempDir()
	writeFiles(t, root, corpusFiles)
	src := TextSource{Path: root, Extensions: []string{".txt"}, SkipDirs: []string{"testdata"}}
	c, err := src.Load(LoadOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Oracle: EOT before each text document, each encoded whole, in sorted order.
	var want []int32
	var bytes int64
	for _, rel := range []string{"UPPER.TXT", "a.txt", "b.txt", "sub/c.txt", "sub/deeper/h.txt"} {
		want = append(want, tokenizer.EOT)
		want = append(want, tok.Encode(corpusFiles[rel])...)
		bytes += int64(len(corpusFiles[rel]))
	}
	if !slices.Equal(c.Tokens, want) {
		t.Fatalf("tokens %v\nwant   %v", c.Tokens, want)
	}
	if !slices.Equal(c.Skipped, []string{"bin.txt", "latin1.txt"}) {
		t.Errorf("skipped %q, want bin.txt and latin1.txt", c.Skipped)
	}
	if c.Bytes != bytes || c.Truncated || c.FromCache || c.CachePath != "" {
		t.Errorf("corpus %+v: bytes want %d, no truncation, no cache", c, bytes)
	}
	text, err := tok.Decode(c.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "<|endoftext|>nested héllo 日本語\n<|endoftext|>deep\n") {
		t.Errorf("decoded corpus %q", text)
	}
}

func TestLoadMaxBytes(t *testing.T) {
	tok := gpt2(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "three\nfour\nfive\n", "c.txt": "six\n"})
	// 8 bytes of a.txt, then 9 more: b.txt is cut after "three\n" (6 bytes), before "four".
	c, err := TextSource{Path: root, MaxBytes: 17}.Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]int32{tokenizer.EOT}, tok.Encode("one\ntwo\n")...), tokenizer.EOT)
	want = append(want, tok.Encode("three\n")...)
	if !slices.Equal(c.Tokens, want) || c.Bytes != 14 || !c.Truncated || !slices.Equal(c.Files, []string{"a.txt", "b.txt"}) {
		t.Fatalf("capped corpus %+v, want tokens %v, 14 bytes, truncated", c, want)
	}
}

func TestLoadParallelDeterministic(t *testing.T) {
	root := t.TempDir()
	var sb strings.Builder
	for i := range 400 {
		sb.WriteString("func f")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("() int {\n\treturn 42 // héllo\n}\n\n")
	}
	writeFiles(t, root, map[string]string{"big.go": sb.String(), "small.go": "package p\n", "z.go": "// end\n"})
	old := chunkTarget
	chunkTarget = 500 // many chunks per document
	defer func() { chunkTarget = old }()
	var ref []int32
	for _, w := range []int{1, 2, 5} {
		var calls int
		var last, total int64
		c, err := TextSource{Path: root}.Load(LoadOptions{Workers: w, Progress: func(d, tot int64) {
			if d < last {
				t.Errorf("progress went back from %d to %d", last, d)
			}
			calls, last, total = calls+1, d, tot
		}})
		if err != nil {
			t.Fatal(err)
		}
		if last != total || total != c.Bytes || calls < 10 {
			t.Errorf("workers %d: progress ended at %d of %d after %d calls (corpus %d bytes)", w, last, total, calls, c.Bytes)
		}
		if ref == nil {
			ref = c.Tokens
			// Chunked encoding equals encoding each file whole.
			tok := gpt2(t)
			want := append([]int32{tokenizer.EOT}, tok.Encode(sb.String())...)
			want = append(want, tokenizer.EOT)
			want = append(want, tok.Encode("package p\n")...)
			want = append(want, tokenizer.EOT)
			want = append(want, tok.Encode("// end\n")...)
			if !slices.Equal(ref, want) {
				t.Fatal("chunked parallel encoding differs from encoding each file whole")
			}
		} else if !slices.Equal(c.Tokens, ref) {
			t.Fatalf("workers %d gave different tokens", w)
		}
	}
}

// Splitting real Go source at the safe cut points must not change a single token.
func TestSplitSafeOnGoSource(t *testing.T) {
	goroot, err := GoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(goroot, "src", "fmt", "print.go"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	tok := gpt2(t)
	whole := tok.Encode(s)
	for _, target := range []int{97, 300, 2000} {
		parts := splitSafe(s, target)
		if len(parts) < 5 || strings.Join(parts, "") != s {
			t.Fatalf("target %d: %d parts that join back: %v", target, len(parts), strings.Join(parts, "") == s)
		}
		var joined []int32
		for _, p := range parts {
			joined = append(joined, tok.Encode(p)...)
		}
		if !slices.Equal(joined, whole) {
			t.Fatalf("target %d: tokens of the parts differ from the tokens of the whole", target)
		}
	}
	// Cuts that isCut rejects really can change tokens: after "\n\n" the pieces differ.
	if a, b := tok.Encode("x\n\ny"), append(tok.Encode("x\n\n"), tok.Encode("y")...); slices.Equal(a, b) {
		t.Fatal("expected a cut after a double newline to change the tokens")
	}
	if isCut("x\n\ny", 3) || !isCut("x\ny", 2) || isCut("x\n y", 2) || isCut(" \ny", 2) {
		t.Fatal("isCut accepts or rejects the wrong places")
	}
}

func TestLoadCache(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	writeFiles(t, root, map[string]string{"a.txt": "alpha beta\n", "b.txt": "gamma\n"})
	src := TextSource{Path: root}
	first, err := src.Load(LoadOptions{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if first.FromCache || first.CachePath == "" || filepath.Dir(first.CachePath) != cache {
		t.Fatalf("first load: from cache %v, path %q", first.FromCache, first.CachePath)
	}
	onDisk, err := ReadTokenFile(first.CachePath)
	if err != nil || !slices.Equal(onDisk, first.Tokens) {
		t.Fatalf("cache file holds %v (%v), want %v", onDisk, err, first.Tokens)
	}
	second, err := src.Load(LoadOptions{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !second.FromCache || second.CachePath != first.CachePath || !slices.Equal(second.Tokens, first.Tokens) ||
		!slices.Equal(second.Files, first.Files) || second.Bytes != first.Bytes {
		t.Fatalf("second load %+v does not match the first %+v from the cache", second, first)
	}
	// A changed file gets a new cache entry and new tokens.
	p := filepath.Join(root, "b.txt")
	if err := os.WriteFile(p, []byte("delta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	third, err := src.Load(LoadOptions{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if third.FromCache || third.CachePath == first.CachePath || slices.Equal(third.Tokens, first.Tokens) {
		t.Fatalf("changed corpus was not re-tokenised: %+v", third)
	}
	// A different cap is a different corpus.
	capped, err := TextSource{Path: root, MaxBytes: 11}.Load(LoadOptions{CacheDir: cache})
	if err != nil || capped.FromCache || capped.CachePath == third.CachePath {
		t.Fatalf("capped load %+v %v reused the uncapped cache", capped, err)
	}
	// A damaged cache file is replaced, not trusted.
	if err := os.WriteFile(third.CachePath, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	fourth, err := src.Load(LoadOptions{CacheDir: cache})
	if err != nil || fourth.FromCache || !slices.Equal(fourth.Tokens, third.Tokens) {
		t.Fatalf("damaged cache: %+v %v", fourth, err)
	}
	if again, err := src.Load(LoadOptions{CacheDir: cache}); err != nil || !again.FromCache {
		t.Fatalf("the cache was not rewritten after damage: %v", err)
	}
}

func TestLoadCorpusDetectsTokenFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"notes.txt": "Hello world"})
	bin := filepath.Join(dir, "data.dat") // any name: the magic decides
	if err := WriteTokenFile(bin, []int32{3, 1, 4}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCorpus(TextSource{Path: bin}, LoadOptions{})
	if err != nil || c.TokenFile != bin || !slices.Equal(c.Tokens, []int32{3, 1, 4}) {
		t.Fatalf("token file: %+v %v", c, err)
	}
	c, err = LoadCorpus(TextSource{Path: filepath.Join(dir, "notes.txt")}, LoadOptions{})
	if err != nil || c.TokenFile != "" || !slices.Equal(c.Tokens, []int32{tokenizer.EOT, 15496, 995}) {
		t.Fatalf("text file: %+v %v", c, err)
	}
	// A damaged token file is an error, not text.
	if err := os.Truncate(bin, 1029); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCorpus(TextSource{Path: bin}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated token file: %v", err)
	}
}

func TestGoSourceCorpus(t *testing.T) {
	src, err := GoSourceCorpus(300 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(src.Path) != "src" || src.MaxBytes != 300<<10 {
		t.Fatalf("source %+v", src)
	}
	if _, err := os.Stat(filepath.Join(src.Path, "runtime", "proc.go")); err != nil {
		t.Fatalf("%s is not the standard library: %v", src.Path, err)
	}
	c, err := src.Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || c.Bytes > 300<<10 || c.Bytes < 250<<10 {
		t.Errorf("capped corpus has %d bytes (truncated %v), want just under %d", c.Bytes, c.Truncated, 300<<10)
	}
	for _, f := range c.Files {
		if !strings.HasSuffix(f, ".go") || strings.Contains("/"+f, "/testdata/") || strings.Contains("/"+f, "/vendor/") {
			t.Errorf("unexpected file %s", f)
		}
	}
	// Go source is about 2 bytes per GPT-2 token (tabs and punctuation are tokens of their own).
	if r := float64(c.Bytes) / float64(len(c.Tokens)); r < 1.5 || r > 3.5 {
		t.Errorf("%.2f bytes per token", r)
	}
	def, _ := GoSourceCorpus(0)
	all, _ := GoSourceCorpus(-1)
	if def.MaxBytes != DefaultGoSourceBytes || all.MaxBytes != 0 {
		t.Errorf("caps: default %d, uncapped %d", def.MaxBytes, all.MaxBytes)
	}
}

func TestGoRootFromEnv(t *testing.T) {
	root, err := GoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOROOT", root)
	if got, err := GoRoot(); err != nil || got != root {
		t.Fatalf("GoRoot with GOROOT=%s: %s %v", root, got, err)
	}
	// A bogus GOROOT falls through to the go command or the build-time root.
	t.Setenv("GOROOT", t.TempDir())
	if got, err := GoRoot(); err != nil || got != root {
		t.Fatalf("GoRoot with a bogus GOROOT: %s %v", got, err)
	}
}

// BenchmarkTokenizeGoSource measures tokenising the default corpus with one worker and with
// all of them; run with -bench TokenizeGoSource -benchtime 1x.
func BenchmarkTokenizeGoSource(b *testing.B) {
	src, err := GoSourceCorpus(0)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []int{1, 0} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			var c *Corpus
			for b.Loop() {
				if c, err = src.Load(LoadOptions{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.Tokens))/1e6, "Mtokens")
			b.SetBytes(c.Bytes)
		})
	}
}

// byteEncoder is a tokenizer with one id per byte.
type byteEncoder struct{}

func (byteEncoder) Encode(s string) []int32 {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out
}

// Another tokenizer is used with its own separator, and named in the cache key; without a
// name it is refused.
func TestLoadWithAnotherTokenizer(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("ab\ncd"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	src := TextSource{Path: root}
	c, err := src.Load(LoadOptions{Tokenizer: byteEncoder{}, Separator: 300, TokenizerID: "bytes", CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Tokens) != "[300 97 98 10 99 100]" {
		t.Fatalf("tokens %v", c.Tokens)
	}
	gpt2, err := src.Load(LoadOptions{CacheDir: cache})
	if err != nil || gpt2.FromCache || gpt2.Tokens[0] != tokenizer.EOT {
		t.Fatalf("GPT-2 after another tokenizer: from cache %v, first token %v, %v", gpt2 != nil && gpt2.FromCache, gpt2.Tokens[:1], err)
	}
	again, err := src.Load(LoadOptions{Tokenizer: byteEncoder{}, Separator: 300, TokenizerID: "bytes", CacheDir: cache})
	if err != nil || !again.FromCache || fmt.Sprint(again.Tokens) != fmt.Sprint(c.Tokens) {
		t.Fatalf("the byte tokenizer's cache: %v, %v", again, err)
	}
	if _, err := src.Load(LoadOptions{Tokenizer: byteEncoder{}}); err == nil || !strings.Contains(err.Error(), "TokenizerID") {
		t.Errorf("a tokenizer without an ID: %v", err)
	}
}
