package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/internal/progress"
)

// modelInfo is what the Hub's API says of a model at a revision.
type modelInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		Name string `json:"rfilename"`
	} `json:"siblings"`
}

// download fetches the files the model needs at the revision into the cache, records the
// revision's commit in refs/, and returns the snapshot directory.
func (r *repo) download(ctx context.Context) (string, error) {
	info, err := r.modelInfo(ctx)
	if err != nil {
		return "", err
	}
	commit := info.SHA
	has := map[string]bool{}
	for _, s := range info.Siblings {
		has[s.Name] = true
	}
	if !has[configFile] {
		return "", fmt.Errorf("the model has no %s at commit %s: not a transformers model", configFile, commit)
	}
	small := []string{configFile}
	for _, f := range optionalFiles {
		if has[f] {
			small = append(small, f)
		} else if err := r.markAbsent(commit, f); err != nil {
			return "", err
		}
	}
	switch {
	case has[indexFile]:
		small = append(small, indexFile)
	case !has[weightsFile]:
		return "", fmt.Errorf("the model has neither %s nor %s at commit %s (vkgrad reads safetensors weights only)", weightsFile, indexFile, commit)
	}
	if err := r.fetchAll(ctx, commit, small, nil); err != nil {
		return "", err
	}
	weights := []string{weightsFile}
	if has[indexFile] {
		if weights, err = r.cachedWeights(r.snapshot(commit)); err != nil {
			return "", err
		}
		for _, s := range weights {
			if !has[s] {
				return "", fmt.Errorf("%s names %s, which the model does not have at commit %s", indexFile, s, commit)
			}
		}
	}
	if err := r.fetchAll(ctx, commit, weights, r.opts.Progress); err != nil {
		return "", err
	}
	if err := r.writeRef(commit); err != nil {
		return "", err
	}
	return r.snapshot(commit), nil
}

// modelInfo asks the API for the revision's commit and the model's file list.
func (r *repo) modelInfo(ctx context.Context) (*modelInfo, error) {
	return r.repoInfo(ctx, r.opts.Revision)
}

// repoInfo asks the API for a revision's commit and the repository's file list.
func (r *repo) repoInfo(ctx context.Context, revision string) (*modelInfo, error) {
	u := fmt.Sprintf("%s/api/%ss/%s/revision/%s", r.opts.Endpoint, r.kind(), r.id, url.PathEscape(revision))
	resp, err := r.do(ctx, http.MethodGet, u, nil, r.opts.Client)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, r.statusError(resp, "")
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(b) > maxJSON {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", u, maxJSON)
	}
	var info modelInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if !commitPattern.MatchString(info.SHA) {
		return nil, fmt.Errorf("%s: sha %q is not a commit hash", u, info.SHA)
	}
	return &info, nil
}

// do sends one request with the token and no transparent compression, so that sizes and
// hashes are those of the file.
func (r *repo) do(ctx context.Context, method, u string, header http.Header, c *http.Client) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "vkgrad")
	req.Header.Set("Accept-Encoding", "identity")
	if r.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w at %s: %w (set HF_HUB_OFFLINE=1 to use the cache only)", errUnreachable, r.opts.Endpoint, err)
	}
	return resp, nil
}

// statusError explains an HTTP error answer; file is "" for the API.
func (r *repo) statusError(resp *http.Response, file string) error {
	code := resp.Header.Get("X-Error-Code")
	detail := resp.Header.Get("X-Error-Message")
	if len(detail) > 300 {
		detail = detail[:300]
	}
	if detail != "" {
		detail = " (the Hub says: " + detail + ")"
	}
	page := r.opts.Endpoint + r.urlPrefix() + "/" + r.id
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		tok := "no token is set"
		if r.opts.Token != "" {
			tok = "the token was refused"
		}
		return fmt.Errorf("%w: %s is gated or private, or does not exist, and %s: set HF_TOKEN to a token that can read it (for a gated %s, accept its terms at %s first)%s",
			ErrUnauthorized, r.id, tok, r.kind(), page, detail)
	case http.StatusForbidden:
		return fmt.Errorf("%w: the token cannot read %s; for a gated %s, accept its terms at %s, or set HF_TOKEN to a token that has%s",
			ErrUnauthorized, r.id, r.kind(), page, detail)
	case http.StatusNotFound:
		switch {
		case code == "RevisionNotFound":
			return fmt.Errorf("%w: revision %q not found in %s%s", ErrNotFound, r.opts.Revision, r.id, detail)
		case code == "EntryNotFound" || (file != "" && code == ""):
			return fmt.Errorf("%w: file %s not found in %s at revision %s%s", ErrNotFound, file, r.id, r.opts.Revision, detail)
		case code == "RepoNotFound":
			return fmt.Errorf("%w: %s %s not found on %s%s", ErrNotFound, r.kind(), r.id, r.opts.Endpoint, detail)
		}
		return fmt.Errorf("%w: %s %s or its revision %q not found on %s%s", ErrNotFound, r.kind(), r.id, r.opts.Revision, r.opts.Endpoint, detail)
	}
	what := "the " + r.kind() + "'s file list"
	if file != "" {
		what = file
	}
	return fmt.Errorf("fetching %s: the Hub answered %s%s", what, resp.Status, detail)
}

var (
	errUnreachable = errors.New("cannot reach the Hub")
	// ErrNotFound: the Hub has no such model, revision or file.
	ErrNotFound = errors.New("not found on the Hub")
	// ErrUnauthorized: the Hub refused access (401 or 403).
	ErrUnauthorized = errors.New("access refused by the Hub")
)

// fileMeta is what a HEAD on a file's resolve URL says of it.
type fileMeta struct {
	name string
	etag string // sha256 (LFS) or git blob SHA-1, lowercase hex
	size int64
}

// fetchAll places files into the commit's snapshot, downloading the blobs it lacks; with bar
// set, it draws one progress bar over their bytes.
func (r *repo) fetchAll(ctx context.Context, commit string, files []string, bar io.Writer) error {
	var todo []fileMeta
	var total int64
	for _, f := range files {
		if exists(filepath.Join(r.snapshot(commit), filepath.FromSlash(f))) {
			continue
		}
		m, err := r.head(ctx, commit, f)
		if err != nil {
			return err
		}
		todo = append(todo, m)
		if !exists(r.blob(m.etag)) {
			total += m.size
		}
	}
	c := &counter{}
	if bar != nil && total > 0 {
		c.bar, c.total = progress.New(bar, int(total)), total
	}
	for _, m := range todo {
		c.file = m.name
		if err := r.fetch(ctx, commit, m, c); err != nil {
			return err
		}
	}
	return nil
}

func (r *repo) blob(etag string) string { return filepath.Join(r.dir, "blobs", etag) }

// head reads a file's hash and size without following a redirect to the CDN, whose answer
// would describe the redirect target rather than the file.
func (r *repo) head(ctx context.Context, commit, file string) (fileMeta, error) {
	c := *r.opts.Client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host || len(via) >= 10 {
			return http.ErrUseLastResponse
		}
		return nil // a renamed model redirects within the Hub
	}
	resp, err := r.do(ctx, http.MethodHead, r.resolveURL(commit, file), nil, &c)
	if err != nil {
		return fileMeta{}, err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fileMeta{}, r.statusError(resp, file)
	}
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	etag = strings.ToLower(strings.Trim(strings.TrimPrefix(etag, "W/"), `"`))
	if !sha256Pattern.MatchString(etag) && !commitPattern.MatchString(etag) {
		return fileMeta{}, fmt.Errorf("%s: the Hub's ETag %q is neither a sha256 nor a git SHA-1, so the download could not be verified", file, etag)
	}
	sizeText := resp.Header.Get("X-Linked-Size")
	if sizeText == "" {
		sizeText = resp.Header.Get("Content-Length")
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 {
		return fileMeta{}, fmt.Errorf("%s: the Hub gave no usable size (%q)", file, sizeText)
	}
	if got := resp.Header.Get("X-Repo-Commit"); got != "" && got != commit {
		return fileMeta{}, fmt.Errorf("%s: the Hub served commit %s for commit %s", file, got, commit)
	}
	return fileMeta{name: file, etag: etag, size: size}, nil
}

func (r *repo) resolveURL(commit, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s%s/%s/resolve/%s/%s", r.opts.Endpoint, r.urlPrefix(), r.id, commit, strings.Join(parts, "/"))
}

// fetch downloads m's blob unless the cache has it, then links the snapshot's file to it.
func (r *repo) fetch(ctx context.Context, commit string, m fileMeta, c *counter) error {
	blob := r.blob(m.etag)
	if !exists(blob) {
		if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		unlock, err := lockBlob(filepath.Join(filepath.Dir(r.dir), ".locks", filepath.Base(r.dir), m.etag+".lock"))
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		err = r.downloadBlob(ctx, commit, m, c)
		unlock()
		if err != nil {
			return err
		}
	}
	return link(filepath.Join(r.snapshot(commit), filepath.FromSlash(m.name)), blob)
}

// downloadBlob fills blobs/<hash>.incomplete, resuming what an earlier attempt left, checks
// its size and hash, and only then renames it to blobs/<hash>.
func (r *repo) downloadBlob(ctx context.Context, commit string, m fileMeta, c *counter) error {
	blob := r.blob(m.etag)
	if exists(blob) { // another process finished it while this one waited for the lock
		return nil
	}
	inc := blob + ".incomplete"
	f, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	defer f.Close()
	h := newHasher(m.etag, m.size)
	have, err := resumePoint(f, h, m.size)
	if err != nil {
		return fmt.Errorf("%s: reading the partial download %s: %w", m.name, inc, err)
	}
	c.add(have)
	if have < m.size {
		if err := r.get(ctx, commit, m, f, h, have, c); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: writing %s: %w", m.name, inc, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: writing %s: %w", m.name, inc, err)
	}
	if got := h.sum(); got != m.etag {
		os.Remove(inc)
		return fmt.Errorf("%s: the downloaded file's %s is %s but the Hub announced %s; discarded it (run again to download it afresh)", m.name, h.kind, got, m.etag)
	}
	if err := os.Rename(inc, blob); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}

// resumePoint feeds the bytes already in f to h and returns how many there are, starting
// afresh when f holds more than the whole file.
func resumePoint(f *os.File, h *hasher, size int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	have := st.Size()
	if have > size {
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
		have = 0
	}
	n, err := io.Copy(h, io.LimitReader(f, have))
	if err == nil && n != have {
		err = io.ErrUnexpectedEOF
	}
	return have, err
}

// get appends the file's bytes from offset have to f, asking for a Range when resuming; a
// server that answers with the whole file restarts it.
func (r *repo) get(ctx context.Context, commit string, m fileMeta, f *os.File, h *hasher, have int64, c *counter) error {
	header := http.Header{}
	if have > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	client := *r.opts.Client
	client.CheckRedirect = dropTokenOffHub
	resp, err := r.do(ctx, http.MethodGet, r.resolveURL(commit, m.name), header, &client)
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0 &&
		strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", have)):
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent:
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if resp.StatusCode == http.StatusPartialContent {
			return fmt.Errorf("%s: the server answered a range other than bytes=%d-; discarded the partial download (run again)", m.name, have)
		}
		h.reset()
		c.add(-have)
		have = 0
	default:
		return r.statusError(resp, m.name)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	w := &fileWriter{w: wrapWriter(f)}
	n, err := io.Copy(io.MultiWriter(w, h, c), io.LimitReader(resp.Body, m.size-have+1))
	if w.err != nil {
		f.Truncate(have + w.n) // keep only what was written whole, for a resume
		return fmt.Errorf("%s: writing %s: %w", m.name, f.Name(), w.err)
	}
	got := have + n
	switch {
	case got > m.size:
		f.Truncate(0)
		return fmt.Errorf("%s: the server sent more than the %d bytes the Hub announced; discarded it", m.name, m.size)
	case err != nil || got < m.size:
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: download interrupted at %d of %d bytes (run again to resume it): %w", m.name, got, m.size, err)
	}
	return nil
}

// dropTokenOffHub keeps the token from the CDN a file redirects to: it is the Hub's, and a
// presigned URL may refuse a second credential.
func dropTokenOffHub(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del("Authorization")
	}
	return nil
}

// wrapWriter lets tests make writes fail, as a full disk would.
var wrapWriter = func(w io.Writer) io.Writer { return w }

// fileWriter keeps a write error apart from a read error of io.Copy.
type fileWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (f *fileWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.n += int64(n)
	if err != nil {
		f.err = err
	}
	return n, err
}

// counter feeds downloaded bytes to the progress bar.
type counter struct {
	bar         *progress.Bar
	done, total int64
	file        string
}

func (c *counter) Write(p []byte) (int, error) {
	c.add(int64(len(p)))
	return len(p), nil
}

func (c *counter) add(n int64) {
	if c.bar == nil {
		return
	}
	c.done += n
	c.bar.Update(int(c.done), fmt.Sprintf("%s of %s | %s", humanBytes(c.done), humanBytes(c.total), c.file))
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGT"[i])
}

// link points the snapshot's file at the blob with a relative symlink, as huggingface_hub does.
func link(pointer, blob string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(pointer); err == nil {
		if err := os.Remove(pointer); err != nil {
			return err
		}
	}
	if err := os.Symlink(rel, pointer); err != nil {
		return fmt.Errorf("linking %s to its blob: %w", pointer, err)
	}
	return nil
}

// markAbsent records in .no_exist/<commit>/ that the model has no such file, so the cache
// knows it need not ask again.
func (r *repo) markAbsent(commit, file string) error {
	p := filepath.Join(r.dir, ".no_exist", commit, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, nil, 0o644)
}

// writeRef records the commit a branch or tag names, replacing the ref whole.
func (r *repo) writeRef(commit string) error {
	rev := r.opts.Revision
	if rev == commit {
		return nil
	}
	p := filepath.Join(r.dir, "refs", filepath.FromSlash(rev))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, []byte(commit), 0o666); err != nil {
		return fmt.Errorf("writing refs/%s: %w", rev, err)
	}
	return nil
}
