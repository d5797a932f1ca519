package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

const repoID = "org/tiny-qwen3"

func repoDir(cache string) string { return filepath.Join(cache, "models--org--tiny-qwen3") }

// checkLayout asserts the cache holds the files as huggingface_hub lays them out: each
// snapshot file a relative symlink to blobs/<its hash>, and refs/main naming the commit.
func checkLayout(t *testing.T, cache, commit string, files map[string][]byte) {
	t.Helper()
	ref, err := os.ReadFile(filepath.Join(repoDir(cache), "refs", "main"))
	if err != nil || string(ref) != commit {
		t.Fatalf("refs/main = %q, %v; want %s", ref, err, commit)
	}
	for name, b := range files {
		p := filepath.Join(repoDir(cache), "snapshots", commit, name)
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := filepath.Join("..", "..", "blobs", hubtest.ETag(name, b)); target != want {
			t.Errorf("%s links to %s, want %s", name, target, want)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: content differs (%v)", name, err)
		}
	}
}

func loads(t *testing.T, dir string) {
	t.Helper()
	if _, err := llama.Load(cpu.New(), dir); err != nil {
		t.Fatalf("llama.Load(%s): %v", dir, err)
	}
}

// A model is downloaded into the cache layout, loads, and afterwards resolves from the cache
// without the network.
func TestDownloadIntoTheCacheLayout(t *testing.T) {
	files := modelFiles(t, "qwen3-tiny", true)
	h := newFakeHub(t, repoID, files)
	cache := t.TempDir()
	var bar bytes.Buffer
	o := h.opts(cache)
	o.Progress = &bar
	dir, err := Resolve(context.Background(), repoID, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(repoDir(cache), "snapshots", h.commit); dir != want {
		t.Fatalf("resolved to %s, want %s", dir, want)
	}
	checkLayout(t, cache, h.commit, files)
	loads(t, dir)
	if !strings.Contains(bar.String(), "of 446.4 kB | model.safetensors") || !strings.Contains(bar.String(), "ETA") {
		t.Errorf("progress bar shows no bytes and ETA: %q", bar.String())
	}
	if !exists(filepath.Join(repoDir(cache), ".no_exist", h.commit, "special_tokens_map.json")) {
		t.Error("the absent special_tokens_map.json was not recorded in .no_exist")
	}
	gets := h.gets
	h.hub.Close()
	again, err := Resolve(context.Background(), repoID, o)
	if err != nil || again != dir || h.gets != gets {
		t.Fatalf("second resolve = %s, %v after %d more downloads; want the cached %s without the network", again, err, h.gets-gets, dir)
	}
}

// The shards a model.safetensors.index.json names are all fetched.
func TestShardedModelDownloadsTheIndexedShards(t *testing.T) {
	files := modelFiles(t, "qwen2-tiny", false)
	h := newFakeHub(t, repoID, files)
	cache := t.TempDir()
	o := h.opts(cache)
	o.Revision = h.commit
	dir, err := Resolve(context.Background(), repoID, o)
	if err != nil {
		t.Fatal(err)
	}
	loads(t, dir)
	if exists(filepath.Join(repoDir(cache), "refs", h.commit)) {
		t.Error("a commit revision should write no ref")
	}
}

// A download that breaks midway leaves only blobs/<hash>.incomplete, and the next attempt
// resumes it with a Range request.
func TestFaultInterruptedDownloadResumes(t *testing.T) {
	files := modelFiles(t, "qwen3-tiny", false)
	h := newFakeHub(t, repoID, files)
	half := len(files["model.safetensors"]) / 2
	h.cutAt = half
	cache := t.TempDir()
	_, err := Resolve(context.Background(), repoID, h.opts(cache))
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("an interrupted download gave %v", err)
	}
	blob := filepath.Join(repoDir(cache), "blobs", hubtest.ETag("model.safetensors", files["model.safetensors"]))
	if st, err := os.Stat(blob + ".incomplete"); err != nil || st.Size() != int64(half) {
		t.Fatalf("the partial download: %v, %v; want %d bytes", st, err, half)
	}
	if exists(blob) || exists(filepath.Join(repoDir(cache), "snapshots", h.commit, "model.safetensors")) {
		t.Fatal("a half-written blob is in place as a complete file")
	}
	if exists(filepath.Join(repoDir(cache), "refs", "main")) {
		t.Fatal("refs/main written before the model was whole")
	}
	dir, err := Resolve(context.Background(), repoID, h.opts(cache))
	if err != nil {
		t.Fatal(err)
	}
	if last := h.ranges[len(h.ranges)-1]; last != fmt.Sprintf("bytes=%d-", half) {
		t.Errorf("the resumed request asked for %q, want bytes=%d-", last, half)
	}
	checkLayout(t, cache, h.commit, files)
	loads(t, dir)
}

// A body whose hash differs from the one the Hub announced is discarded, never used.
func TestFaultWrongHashIsRefused(t *testing.T) {
	for _, name := range []string{"model.safetensors", "config.json"} {
		t.Run(name, func(t *testing.T) {
			files := modelFiles(t, "qwen3-tiny", false)
			h := newFakeHub(t, repoID, files)
			h.corrupt = name
			cache := t.TempDir()
			_, err := Resolve(context.Background(), repoID, h.opts(cache))
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "announced") {
				t.Fatalf("a corrupted %s gave %v", name, err)
			}
			blob := filepath.Join(repoDir(cache), "blobs", hubtest.ETag(name, files[name]))
			if exists(blob) || exists(blob+".incomplete") || exists(filepath.Join(repoDir(cache), "snapshots", h.commit, name)) {
				t.Fatal("the corrupted download was kept")
			}
			h.corrupt = ""
			if _, err := Resolve(context.Background(), repoID, h.opts(cache)); err != nil {
				t.Fatalf("after the corruption, a fresh download: %v", err)
			}
		})
	}
}

// 401, 404 and 500 answers each say what happened and what to do.
func TestFaultHubErrors(t *testing.T) {
	files := modelFiles(t, "qwen3-tiny", false)
	h := newFakeHub(t, repoID, files)
	cache := t.TempDir()
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(cache, "no-token"))
	h.token = "secret"
	_, err := Resolve(context.Background(), repoID, h.opts(cache))
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "gated") {
		t.Errorf("401: %v", err)
	}
	o := h.opts(cache)
	o.Token = "secret"
	if _, err := Resolve(context.Background(), repoID, o); err != nil {
		t.Errorf("with the token: %v", err)
	}
	if h.cdnAuth != 0 {
		t.Errorf("the token reached the CDN %d times", h.cdnAuth)
	}
	h.token = ""
	cases := []struct {
		name, rev, want string
	}{
		{"org/nope", "main", "model org/nope not found"},
		{repoID, "v9", `revision "v9" not found in org/tiny-qwen3`},
	}
	for _, c := range cases {
		o := h.opts(t.TempDir())
		o.Revision = c.rev
		if _, err := Resolve(context.Background(), c.name, o); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s@%s: %v, want %q", c.name, c.rev, err, c.want)
		}
	}
	h.fail["config.json"] = 500
	if _, err := Resolve(context.Background(), repoID, h.opts(t.TempDir())); err == nil ||
		!strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "injected failure") {
		t.Errorf("500: %v", err)
	}
}

// A write that fails, as on a full disk, names the file and leaves no complete blob.
func TestFaultFullDisk(t *testing.T) {
	files := modelFiles(t, "qwen3-tiny", false)
	h := newFakeHub(t, repoID, files)
	old := wrapWriter
	t.Cleanup(func() { wrapWriter = old })
	wrapWriter = func(w io.Writer) io.Writer { return &fullDisk{w: w, room: 10000} }
	cache := t.TempDir()
	_, err := Resolve(context.Background(), repoID, h.opts(cache))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("a full disk gave %v", err)
	}
	if exists(filepath.Join(repoDir(cache), "snapshots", h.commit, "model.safetensors")) ||
		exists(filepath.Join(repoDir(cache), "blobs", hubtest.ETag("model.safetensors", files["model.safetensors"]))) {
		t.Fatal("a partly written file is in place as a complete one")
	}
	wrapWriter = old
	dir, err := Resolve(context.Background(), repoID, h.opts(cache))
	if err != nil {
		t.Fatalf("once there is room: %v", err)
	}
	loads(t, dir)
}

// fullDisk accepts room bytes, then fails as a full disk does.
type fullDisk struct {
	w    io.Writer
	room int
}

func (f *fullDisk) Write(p []byte) (int, error) {
	if len(p) > f.room {
		n, _ := f.w.Write(p[:f.room])
		f.room = 0
		return n, syscall.ENOSPC
	}
	f.room -= len(p)
	return f.w.Write(p)
}

// Offline, a cache laid out by huggingface_hub is used by branch or commit, and what is missing
// is named.
func TestOfflineUsesTheCacheOnly(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	cache := t.TempDir()
	files := modelFiles(t, "qwen3-tiny", false)
	snap, err := hubtest.Store(cache, repoID, "main", files)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{CacheDir: cache, Endpoint: "http://127.0.0.1:1"}
	dir, err := Resolve(context.Background(), repoID, o)
	if err != nil || dir != snap {
		t.Fatalf("offline resolve = %s, %v; want %s", dir, err, snap)
	}
	loads(t, dir)
	o.Revision = filepath.Base(snap)
	if dir, err := Resolve(context.Background(), repoID, o); err != nil || dir != snap {
		t.Errorf("by commit: %s, %v", dir, err)
	}
	o.Revision = "main"
	if _, err := Resolve(context.Background(), "org/other", o); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), "refs/main") {
		t.Errorf("a model not in the cache: %v", err)
	}
	blob := filepath.Join(repoDir(cache), "blobs", hubtest.ETag("model.safetensors", files["model.safetensors"]))
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(context.Background(), repoID, o); err == nil || !strings.Contains(err.Error(), "lacks model.safetensors") {
		t.Errorf("a snapshot whose weights are gone: %v", err)
	}
}

// With the Hub out of reach, a cached snapshot holding config.json and the weights is used
// even though its optional files were never looked for.
func TestHubOutOfReachFallsBackToTheCache(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "")
	cache := t.TempDir()
	snap, err := hubtest.Store(cache, repoID, "main", modelFiles(t, "qwen3-tiny", false))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{CacheDir: cache, Endpoint: "http://127.0.0.1:1"}
	if dir, err := Resolve(context.Background(), repoID, o); err != nil || dir != snap {
		t.Fatalf("resolve with the Hub out of reach = %s, %v; want the cached %s", dir, err, snap)
	}
	if _, err := Resolve(context.Background(), "org/other", o); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("a model neither cached nor reachable: %v", err)
	}
}

// An existing local path wins over a model name, and a missing path that is no name says so.
func TestLocalPathWins(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll(repoID, 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{CacheDir: t.TempDir(), Endpoint: "http://127.0.0.1:1"}
	if dir, err := Resolve(context.Background(), repoID, o); err != nil || dir != repoID {
		t.Errorf("local directory: %s, %v", dir, err)
	}
	if _, err := Resolve(context.Background(), "runs/a/b", o); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing path: %v", err)
	}
	o.Revision = "../../etc"
	if _, err := Resolve(context.Background(), "org/x", o); err == nil || !strings.Contains(err.Error(), "revision") {
		t.Errorf("a revision leaving refs/: %v", err)
	}
}

func TestIsRepoID(t *testing.T) {
	for name, want := range map[string]bool{
		"Qwen/Qwen3-0.6B": true, "org/tiny_model.v2": true,
		"gpt2": false, "./org/x": false, "/org/x": false, "a/b/c": false, "org/..": false,
		"org/a--b": false, "org/x.git": false, "org/": false, "run/checkpoint.safetensors ": false,
	} {
		if IsRepoID(name) != want {
			t.Errorf("IsRepoID(%q) = %v", name, !want)
		}
	}
}

func TestCacheDirFromEnv(t *testing.T) {
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_HUB_CACHE", "/c")
	t.Setenv("HF_HOME", "/h")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if d := CacheDir(); d != "/c" {
		t.Errorf("HF_HUB_CACHE: %s", d)
	}
	t.Setenv("HF_HUB_CACHE", "")
	if d := CacheDir(); d != filepath.Join("/h", "hub") {
		t.Errorf("HF_HOME: %s", d)
	}
	t.Setenv("HF_HOME", "")
	if d := CacheDir(); d != filepath.Join("/x", "huggingface", "hub") {
		t.Errorf("XDG_CACHE_HOME: %s", d)
	}
}

func TestTokenSourceNamesWhereTheTokenIsNotTheToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HF_HOME", dir)
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_TOKEN", "")
	if got := TokenSource(); got != "" {
		t.Errorf("no token: TokenSource = %q", got)
	}
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("hf_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := TokenSource(); got != file {
		t.Errorf("token file: TokenSource = %q, want %q", got, file)
	}
	t.Setenv("HF_TOKEN", "hf_env")
	if got := TokenSource(); got != "HF_TOKEN" {
		t.Errorf("HF_TOKEN set: TokenSource = %q", got)
	}
}
