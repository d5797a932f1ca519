package hub

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
)

// fakeHub serves one model the way the Hub does: the API's file list, resolve URLs answering
// HEAD and GET with X-Repo-Commit, ETag or X-Linked-Etag/X-Linked-Size, and LFS files through a
// redirect to a separate CDN server that honours Range.
type fakeHub struct {
	t      *testing.T
	repo   string
	commit string
	files  map[string][]byte
	hub    *httptest.Server
	cdn    *httptest.Server

	mu      sync.Mutex
	token   string         // when set, requests must carry it
	cutAt   int            // when > 0, the next GET of an LFS file breaks after this many bytes
	corrupt string         // a file whose GET body is altered
	fail    map[string]int // file → status its resolve URL answers
	ranges  []string       // the Range headers of GETs on the CDN
	cdnAuth int            // requests that reached the CDN with an Authorization header
	gets    int
}

func newFakeHub(t *testing.T, repo string, files map[string][]byte) *fakeHub {
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "no-token"))
	f := &fakeHub{t: t, repo: repo, commit: hubtest.Commit(files), files: files, fail: map[string]int{}}
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	f.hub = httptest.NewServer(http.HandlerFunc(f.serveHub))
	t.Cleanup(f.hub.Close)
	t.Cleanup(f.cdn.Close)
	return f
}

// modelFiles reads a fixture model directory of nn/llama plus the carried tokenizer files.
func modelFiles(t *testing.T, name string, tokenizer bool) map[string][]byte {
	t.Helper()
	files, err := hubtest.ReadDir(filepath.Join("..", "llama", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	delete(files, "expected.json")
	delete(files, "expected.safetensors")
	if tokenizer {
		tok, err := hubtest.ReadDir(filepath.Join(testutil.FixturesDir(t), "llama", "tokenizer"))
		if err != nil {
			t.Fatal(err)
		}
		files["tokenizer.json"], files["tokenizer_config.json"] = tok["tokenizer.json"], tok["tokenizer_config.json"]
	}
	return files
}

func (f *fakeHub) opts(cache string) Options {
	return Options{CacheDir: cache, Endpoint: f.hub.URL, Client: &http.Client{Timeout: 30 * time.Second}}
}

func (f *fakeHub) authorized(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	tok := f.token
	f.mu.Unlock()
	if tok != "" && r.Header.Get("Authorization") != "Bearer "+tok {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}
	return true
}

func (f *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	path := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(path, "/api/models/"); ok {
		f.serveAPI(w, rest)
		return
	}
	repo, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/resolve/")
	if !ok || repo != f.repo {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "no such repo", http.StatusNotFound)
		return
	}
	rev, name, _ := strings.Cut(rest, "/")
	if rev != f.commit && rev != "main" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "no such revision", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	status := f.fail[name]
	f.mu.Unlock()
	if status != 0 {
		w.Header().Set("X-Error-Message", "injected failure")
		http.Error(w, "failure", status)
		return
	}
	b, ok := f.files[name]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", f.commit)
	etag := hubtest.ETag(name, b)
	if hubtest.LFS(name) {
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
		w.Header().Set("ETag", `W/"not-the-content-hash"`)
		http.Redirect(w, r, f.cdn.URL+"/blob/"+name, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	f.serveBody(w, r, name, b)
}

func (f *fakeHub) serveAPI(w http.ResponseWriter, rest string) {
	i := strings.Index(rest, "/revision/")
	if i < 0 || rest[:i] != f.repo {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "no such repo", http.StatusNotFound)
		return
	}
	if rev := rest[i+len("/revision/"):]; rev != "main" && rev != f.commit {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "no such revision", http.StatusNotFound)
		return
	}
	type sibling struct {
		Name string `json:"rfilename"`
	}
	info := struct {
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{ID: f.repo, SHA: f.commit}
	names := []string{".gitattributes", "README.md"}
	for n := range f.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info.Siblings = append(info.Siblings, sibling{n})
	}
	json.NewEncoder(w).Encode(info)
}

func (f *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/blob/")
	if r.Header.Get("Authorization") != "" {
		f.mu.Lock()
		f.cdnAuth++
		f.mu.Unlock()
	}
	b, ok := f.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	f.serveBody(w, r, name, b)
}

// serveBody answers with the file, honouring Range, corrupting or cutting it when asked to.
func (f *fakeHub) serveBody(w http.ResponseWriter, r *http.Request, name string, b []byte) {
	f.mu.Lock()
	cut := 0
	if r.Method == http.MethodGet {
		f.gets++
		if hubtest.LFS(name) {
			f.ranges = append(f.ranges, r.Header.Get("Range"))
			cut, f.cutAt = f.cutAt, 0
		}
		if name == f.corrupt {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 1
		}
	}
	f.mu.Unlock()
	if cut > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops midway
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
