package hubtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hub is a fake Hugging Face Hub serving dataset repositories: the API's file list at
// /api/datasets/ORG/NAME/revision/REV and the files at /datasets/ORG/NAME/resolve/REV/PATH,
// with the headers the real Hub sends (X-Repo-Commit, ETag, or X-Linked-Etag and
// X-Linked-Size and a redirect for LFS files).
type Hub struct {
	// URL is the endpoint to give as $HF_ENDPOINT.
	URL      string
	srv, cdn *httptest.Server // the CDN is another host, as the Hub's is

	mu    sync.Mutex
	repos map[string]map[string]map[string][]byte // id → revision or commit → files
	gets  []string                                // the files downloaded, in order
}

// NewHub starts a fake Hub; Close stops it.
func NewHub() *Hub {
	h := &Hub{repos: map[string]map[string]map[string][]byte{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveLFS))
	h.URL = h.srv.URL
	return h
}

// Close stops the servers.
func (h *Hub) Close() {
	h.srv.Close()
	h.cdn.Close()
}

// AddDataset publishes files as dataset id at revision (a branch such as "main" or
// "refs/convert/parquet") and returns their commit, which names them too.
func (h *Hub) AddDataset(id, revision string, files map[string][]byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repos[id] == nil {
		h.repos[id] = map[string]map[string][]byte{}
	}
	commit := Commit(files)
	h.repos[id][revision], h.repos[id][commit] = files, files
	return commit
}

// Downloads are the files fetched with GET so far, in order.
func (h *Hub) Downloads() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.gets...)
}

// lookup finds the files of repository id at revision; code is the Hub's X-Error-Code when
// there are none.
func (h *Hub) lookup(id, revision string) (files map[string][]byte, code string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	revs, ok := h.repos[id]
	if !ok {
		return nil, "RepoNotFound"
	}
	if files, ok = revs[revision]; !ok {
		return nil, "RevisionNotFound"
	}
	return files, ""
}

func notFound(w http.ResponseWriter, code string) {
	w.Header().Set("X-Error-Code", code)
	http.Error(w, code, http.StatusNotFound)
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/datasets/"); ok {
		h.serveAPI(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(p, "/datasets/")
	if !ok {
		notFound(w, "RepoNotFound")
		return
	}
	parts := strings.SplitN(rest, "/", 5) // ORG, NAME, "resolve", REV, PATH
	if len(parts) < 5 || parts[2] != "resolve" {
		notFound(w, "RepoNotFound")
		return
	}
	id := parts[0] + "/" + parts[1]
	rev, _ := url.PathUnescape(parts[3])
	name, _ := url.PathUnescape(parts[4])
	files, code := h.lookup(id, rev)
	if code != "" {
		notFound(w, code)
		return
	}
	b, ok := files[name]
	if !ok {
		notFound(w, "EntryNotFound")
		return
	}
	w.Header().Set("X-Repo-Commit", Commit(files))
	etag := ETag(name, b)
	if LFS(name) {
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
		http.Redirect(w, r, h.cdn.URL+"/"+id+"/"+Commit(files)+"/"+parts[4], http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	h.serveBody(w, r, name, b)
}

// serveLFS answers the redirect of an LFS file, as the Hub's CDN does.
func (h *Hub) serveLFS(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/", 4) // ORG, NAME, COMMIT, PATH
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	name, _ := url.PathUnescape(parts[3])
	files, code := h.lookup(parts[0]+"/"+parts[1], parts[2])
	b, ok := files[name]
	if code != "" || !ok {
		http.NotFound(w, r)
		return
	}
	h.serveBody(w, r, name, b)
}

func (h *Hub) serveBody(w http.ResponseWriter, r *http.Request, name string, b []byte) {
	if r.Method == http.MethodGet {
		h.mu.Lock()
		h.gets = append(h.gets, name)
		h.mu.Unlock()
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// serveAPI lists a revision's files with their sizes, and the sha256 of LFS ones.
func (h *Hub) serveAPI(w http.ResponseWriter, rest string) {
	id, rev, ok := strings.Cut(rest, "/revision/")
	if !ok {
		notFound(w, "RepoNotFound")
		return
	}
	rev, _ = url.PathUnescape(rev)
	files, code := h.lookup(id, rev)
	if code != "" {
		notFound(w, code)
		return
	}
	type lfs struct {
		SHA256 string `json:"sha256"`
		Size   int    `json:"size"`
	}
	type sibling struct {
		Name string `json:"rfilename"`
		Size int    `json:"size"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	info := struct {
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{ID: id, SHA: Commit(files)}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := sibling{Name: n, Size: len(files[n])}
		if LFS(n) {
			s.LFS = &lfs{SHA256: ETag(n, files[n]), Size: len(files[n])}
		}
		info.Siblings = append(info.Siblings, s)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(info)
}
