package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
)

// TextSource is a raw-text corpus: one file, or a folder walked recursively. Files are taken
// in sorted order of their slash-separated relative paths, so a corpus always tokenises to the
// same stream. Entries whose names start with "." are skipped below the root, and so are files
// that are not valid UTF-8 or contain NUL bytes (binaries).
type TextSource struct {
	// Path is a file or a folder.
	Path string
	// Extensions keeps only files whose names end with one of these (".go", "txt"; case
	// insensitive). Empty keeps every file. Ignored when Path is a file.
	Extensions []string
	// SkipDirs names folders not to descend into, e.g. "testdata".
	SkipDirs []string
	// MaxBytes caps the text read; the file that crosses the cap is cut at its last newline
	// within it. 0 reads everything.
	MaxBytes int64
}

// TextFile is one file of a TextSource.
type TextFile struct {
	Path    string    // as found on disk
	Rel     string    // slash-separated, relative to the source folder
	Size    int64     // bytes
	ModTime time.Time // last modification
	Mode    fs.FileMode
}

// LoadOptions controls TextSource.Load.
type LoadOptions struct {
	// CacheDir keeps the tokenised corpus as an llm.c token file named by a hash of the file
	// list, sizes and modification times, so an unchanged corpus is read back instead of
	// tokenised again. Empty disables the cache.
	CacheDir string
	// Workers tokenising in parallel; 0 uses GOMAXPROCS. The result does not depend on it.
	Workers int
	// Progress, when set, is called from the calling goroutine about every 1% of the
	// tokenisation and at its end, with the bytes done so far and the total.
	Progress func(doneBytes, totalBytes int64)
	// Tokenizer defaults to GPT-2's. Another (a Hugging Face model's, say) needs Separator, the
	// token that precedes each document, and TokenizerID, which names it in the cache key.
	Tokenizer   Encoder
	Separator   int32
	TokenizerID string
}

// Encoder turns text into token ids. Text is cut between documents and at lone newlines
// between printable ASCII characters (splitSafe) before encoding: byte-level BPE tokenizers
// whose pre-tokenizer makes a newline its own piece (GPT-2's, Llama 3's, Qwen's) give the same
// ids for the pieces as for the whole.
type Encoder interface {
	Encode(text string) []int32
}

// Corpus is a tokenised TextSource: each document (file) is preceded by the EOT token, as in
// llm.c's data preparation, so a model learns to start a document after EOT.
type Corpus struct {
	Tokens    []int32
	Files     []string // relative paths of the files whose text is in Tokens, in order
	Skipped   []string // relative paths of files skipped as binary or not UTF-8
	Bytes     int64    // bytes of text tokenised
	Truncated bool     // MaxBytes cut the corpus short
	CachePath string   // the token cache used or written; empty without a cache
	FromCache bool     // Tokens were read from CachePath
	TokenFile string   // set when LoadCorpus read an llm.c token file instead of text
}

// LoadCorpus loads src.Path as an llm.c token file when it is one (recognised by its magic
// number, whatever its name), and as raw text otherwise.
func LoadCorpus(src TextSource, opt LoadOptions) (*Corpus, error) {
	if isTokenFile(src.Path) {
		toks, err := ReadTokenFile(src.Path)
		if err != nil {
			return nil, err
		}
		return &Corpus{Tokens: toks, Files: []string{filepath.Base(src.Path)}, TokenFile: src.Path}, nil
	}
	return src.Load(opt)
}

func isTokenFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	return binary.LittleEndian.Uint32(b[:]) == TokenFileMagic
}

// List returns the files of the source in the order they are tokenised.
func (s TextSource) List() ([]TextFile, error) {
	if s.Path == "" {
		return nil, errors.New("text source: no path given")
	}
	if s.MaxBytes < 0 {
		return nil, fmt.Errorf("text source %s: max bytes %d is negative", s.Path, s.MaxBytes)
	}
	exts, err := normaliseExts(s.Extensions)
	if err != nil {
		return nil, fmt.Errorf("text source %s: %w", s.Path, err)
	}
	st, err := os.Stat(s.Path)
	if err != nil {
		return nil, fmt.Errorf("text source: %w", err)
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("text source %s: not a regular file or folder", s.Path)
		}
		return []TextFile{{Path: s.Path, Rel: filepath.Base(s.Path), Size: st.Size(), ModTime: st.ModTime(), Mode: st.Mode()}}, nil
	}
	files, err := s.walk(exts)
	if err != nil {
		return nil, fmt.Errorf("text source %s: %w", s.Path, err)
	}
	if len(files) == 0 {
		what := "no files"
		if len(exts) > 0 {
			what = fmt.Sprintf("no files ending in %s", strings.Join(exts, ", "))
		}
		return nil, fmt.Errorf("text source %s: %s (folder walked recursively, hidden entries skipped)", s.Path, what)
	}
	slices.SortFunc(files, func(a, b TextFile) int { return strings.Compare(a.Rel, b.Rel) })
	return files, nil
}

// walk returns the regular files under the folder s.Path that end in one of exts (any when
// empty), outside hidden entries and SkipDirs.
func (s TextSource) walk(exts []string) ([]TextFile, error) {
	var files []TextFile
	err := filepath.WalkDir(s.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == s.Path {
			return nil
		}
		if skip, err := s.skip(d, exts); skip {
			return err
		}
		f, ok, err := s.textFile(p)
		if ok {
			files = append(files, f)
		}
		return err
	})
	return files, err
}

// skip says whether the walk passes over d, with filepath.SkipDir for a folder it does not
// enter: hidden entries, SkipDirs, and files of other extensions.
func (s TextSource) skip(d fs.DirEntry, exts []string) (bool, error) {
	name := d.Name()
	switch {
	case strings.HasPrefix(name, ".") && d.IsDir():
		return true, filepath.SkipDir
	case strings.HasPrefix(name, "."):
		return true, nil
	case d.IsDir() && slices.Contains(s.SkipDirs, name):
		return true, filepath.SkipDir
	case d.IsDir():
		return true, nil
	}
	return !matchExt(name, exts), nil
}

// textFile describes the file at p (following a symlink); ok is false when it is not a
// regular file.
func (s TextSource) textFile(p string) (f TextFile, ok bool, err error) {
	info, err := os.Stat(p)
	if err != nil {
		return TextFile{}, false, err
	}
	if !info.Mode().IsRegular() {
		return TextFile{}, false, nil
	}
	rel, err := filepath.Rel(s.Path, p)
	if err != nil {
		return TextFile{}, false, err
	}
	return TextFile{Path: p, Rel: filepath.ToSlash(rel), Size: info.Size(), ModTime: info.ModTime(), Mode: info.Mode()}, true, nil
}

func normaliseExts(exts []string) ([]string, error) {
	out := make([]string, 0, len(exts))
	for _, e := range exts {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" || e == "." {
			return nil, fmt.Errorf("empty entry in the extension filter %q", exts)
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		out = append(out, e)
	}
	return out, nil
}

func matchExt(name string, exts []string) bool {
	if len(exts) == 0 {
		return true
	}
	lower := strings.ToLower(name)
	for _, e := range exts {
		if strings.HasSuffix(lower, e) {
			return true
		}
	}
	return false
}

// cacheKey hashes everything that decides the token stream.
func (s TextSource) cacheKey(files []TextFile, tokName string) (string, error) {
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return "", fmt.Errorf("text source %s: %w", s.Path, err)
	}
	exts, _ := normaliseExts(s.Extensions)
	h := sha256.New()
	fmt.Fprintf(h, "vkgrad text corpus v1\ntokenizer %s\nroot %s\nexts %q\nskip %q\nmax %d\n", tokName, abs, exts, s.SkipDirs, s.MaxBytes)
	for _, f := range files {
		fmt.Fprintf(h, "%q %d %d\n", f.Rel, f.Size, f.ModTime.UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// cacheMeta sits beside the cached token file and describes it.
type cacheMeta struct {
	Files     []string `json:"files"`
	Skipped   []string `json:"skipped"`
	Bytes     int64    `json:"bytes"`
	Truncated bool     `json:"truncated"`
	Tokens    int      `json:"tokens"`
}

// Load tokenises the source, or reads it from the cache when the files are unchanged.
func (s TextSource) Load(opt LoadOptions) (*Corpus, error) {
	files, err := s.List()
	if err != nil {
		return nil, err
	}
	tok, sep, tokID, err := s.tokenizer(opt)
	if err != nil {
		return nil, err
	}
	if opt.Workers < 0 {
		return nil, fmt.Errorf("text source %s: %d workers", s.Path, opt.Workers)
	}
	var cachePath, metaPath string
	if opt.CacheDir != "" {
		key, err := s.cacheKey(files, tokID)
		if err != nil {
			return nil, err
		}
		cachePath = filepath.Join(opt.CacheDir, "tokens-"+key+".bin")
		metaPath = filepath.Join(opt.CacheDir, "tokens-"+key+".json")
		if c, ok := readCache(cachePath, metaPath); ok {
			return c, nil
		}
	}
	c, docs, err := s.readDocs(files)
	if err != nil {
		return nil, err
	}
	c.CachePath = cachePath
	c.Tokens = encodeDocs(tok, sep, docs, opt.Workers, c.Bytes, opt.Progress)
	if cachePath != "" {
		if err := writeCache(opt.CacheDir, cachePath, metaPath, c, cachePerm(files)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// tokenizer returns the tokenizer Load uses, the separator before each document and the name
// of both in the cache key.
func (s TextSource) tokenizer(opt LoadOptions) (Encoder, int32, string, error) {
	tok, sep, tokID := opt.Tokenizer, opt.Separator, opt.TokenizerID
	if tok == nil {
		gpt2Tok, err := tokenizer.GPT2()
		if err != nil {
			return nil, 0, "", err
		}
		return gpt2Tok, tokenizer.EOT, tokenizer.Name, nil
	}
	if tokID == "" {
		return nil, 0, "", fmt.Errorf("text source %s: a tokenizer other than GPT-2's needs a TokenizerID for the token cache", s.Path)
	}
	return tok, sep, fmt.Sprintf("%s separator %d", tokID, sep), nil
}

// readDocs reads the text files in order, skipping binary ones and stopping at MaxBytes (cut
// at the last whole line), and returns the corpus description (without tokens) and the texts.
func (s TextSource) readDocs(files []TextFile) (*Corpus, []string, error) {
	c := &Corpus{}
	var docs []string
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("text source %s: %w", s.Path, err)
		}
		if isBinary(b) {
			c.Skipped = append(c.Skipped, f.Rel)
			continue
		}
		if s.MaxBytes > 0 && c.Bytes+int64(len(b)) > s.MaxBytes {
			c.Truncated = true
			if i := bytes.LastIndexByte(b[:s.MaxBytes-c.Bytes], '\n'); i >= 0 {
				b = b[:i+1]
			} else {
				b = nil
			}
		}
		if len(b) > 0 {
			docs = append(docs, string(b))
			c.Files = append(c.Files, f.Rel)
			c.Bytes += int64(len(b))
		}
		if c.Truncated {
			break
		}
	}
	if len(docs) == 0 {
		return nil, nil, fmt.Errorf("text source %s: no text: %d files found, %d skipped as binary, the rest empty or beyond max bytes %d", s.Path, len(files), len(c.Skipped), s.MaxBytes)
	}
	return c, docs, nil
}

// writeCache stores c's tokens at cachePath and its description at metaPath, in dir, with the
// permissions perm (less the umask).
func writeCache(dir, cachePath, metaPath string, c *Corpus, perm fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("token cache: %w", err)
	}
	if err := writeTokenFile(cachePath, c.Tokens, perm); err != nil {
		return fmt.Errorf("token cache: %w", err)
	}
	meta, _ := json.MarshalIndent(cacheMeta{c.Files, c.Skipped, c.Bytes, c.Truncated, len(c.Tokens)}, "", " ")
	if err := atomicfile.WriteFile(metaPath, meta, perm); err != nil {
		return fmt.Errorf("token cache: %w", err)
	}
	return nil
}

// cachePerm is the permissions of a cache of files: a copy of their text is readable by no one
// who cannot read every one of them.
func cachePerm(files []TextFile) fs.FileMode {
	perm := fs.FileMode(0o666)
	for _, f := range files {
		perm &= f.Mode.Perm()
	}
	return perm
}

// readCache returns the cached corpus when both files are present and agree; anything else
// means tokenising again.
func readCache(tokPath, metaPath string) (*Corpus, bool) {
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		return nil, false
	}
	var m cacheMeta
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	toks, err := ReadTokenFile(tokPath)
	if err != nil || len(toks) != m.Tokens {
		return nil, false
	}
	return &Corpus{Tokens: toks, Files: m.Files, Skipped: m.Skipped, Bytes: m.Bytes, Truncated: m.Truncated,
		CachePath: tokPath, FromCache: true}, true
}

// isBinary reports a file that is not text: a NUL byte in its first 8 KiB (as git decides), or
// invalid UTF-8 anywhere.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0 || !utf8.Valid(b)
}

// chunkTarget is the size of the pieces large documents are cut into for parallel encoding.
var chunkTarget = 256 << 10

// encodeDocs tokenises docs, each preceded by sep, in parallel; the result equals encoding
// each document whole, one after another.
func encodeDocs(tok Encoder, sep int32, docs []string, workers int, total int64, progress func(int64, int64)) []int32 {
	type job struct {
		text string
		eot  bool // the first chunk of a document carries the document's EOT
	}
	var jobs []job
	for _, d := range docs {
		for i, c := range splitSafe(d, chunkTarget) {
			jobs = append(jobs, job{c, i == 0})
		}
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	results := make([][]int32, len(jobs))
	next := make(chan int)
	done := make(chan int64)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				var out []int32
				if jobs[i].eot {
					out = append(out, sep)
				}
				results[i] = append(out, tok.Encode(jobs[i].text)...)
				done <- int64(len(jobs[i].text))
			}
		})
	}
	go func() {
		for i := range jobs {
			next <- i
		}
		close(next)
		wg.Wait()
		close(done)
	}()
	// Report about every 1%, so a callback that prints stays quiet enough.
	var doneBytes, reported int64
	for n := range done {
		doneBytes += n
		if progress != nil && (doneBytes == total || doneBytes-reported >= total/100) {
			progress(doneBytes, total)
			reported = doneBytes
		}
	}
	n := 0
	for _, r := range results {
		n += len(r)
	}
	out := make([]int32, 0, n)
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

// splitSafe cuts s into pieces of about target bytes at places where GPT-2's pre-tokenizer
// splits anyway, so encoding the pieces separately gives the same tokens as encoding s whole.
// Such a place is right after a lone "\n" that sits between two printable non-space ASCII
// characters: the pattern's pieces never join a newline with a non-space character, and a
// single newline is its own piece whether or not text follows it.
func splitSafe(s string, target int) []string {
	var out []string
	for len(s) > target {
		cut := -1
		for i := target; i < len(s) && cut < 0; i++ {
			if isCut(s, i) {
				cut = i
			}
		}
		if cut < 0 {
			break
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

func isCut(s string, i int) bool {
	return i >= 2 && i < len(s) && s[i-1] == '\n' && printable(s[i-2]) && printable(s[i])
}

func printable(c byte) bool { return c > ' ' && c < 0x7f }
