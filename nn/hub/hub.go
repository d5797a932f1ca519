package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/vkgrad/vkgrad/internal/modelfile"
)

// DefaultEndpoint is the Hub used when $HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// Options tune Resolve; the zero value reads everything from the environment, as
// huggingface_hub does.
type Options struct {
	// Revision is a branch, tag or 40-hex commit (default "main").
	Revision string
	// CacheDir overrides the cache location (default: CacheDir()).
	CacheDir string
	// Endpoint overrides $HF_ENDPOINT.
	Endpoint string
	// Token overrides $HF_TOKEN (else the token file that `hf auth login` writes).
	Token string
	// Offline forbids the network, as HF_HUB_OFFLINE=1 does.
	Offline bool
	// Client makes the requests (default: one with a connect timeout and no overall one, since
	// weights take long to download).
	Client *http.Client
	// Progress, when set, receives a progress bar of the download of the weights or of a
	// dataset split's files.
	Progress io.Writer
}

// files a model may need besides its weights; config.json is required, the others optional.
var (
	configFile    = "config.json"
	optionalFiles = []string{"generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}
	weightsFile   = "model.safetensors"
	indexFile     = "model.safetensors.index.json"
)

// maxJSON bounds the JSON bodies read from the network.
const maxJSON = 64 << 20

var (
	repoIDPattern = regexp.MustCompile(`^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// IsRepoID reports whether name has the form ORG/NAME of a Hub model id (a local path such as
// "./x", "/x", "a/b/c" or "a/../b" does not).
func IsRepoID(name string) bool {
	return repoIDPattern.MatchString(name) && !strings.Contains(name, "--") && !strings.Contains(name, "..") &&
		!strings.HasSuffix(name, ".git")
}

// CacheDir is the Hugging Face hub cache directory the environment selects.
func CacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return d
	}
	return filepath.Join(hfHome(), "hub")
}

func hfHome() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// tokenFile is where huggingface_hub's login saves the token: $HF_TOKEN_PATH, else
// $HF_HOME/token.
func tokenFile() string {
	if p := os.Getenv("HF_TOKEN_PATH"); p != "" {
		return p
	}
	return filepath.Join(hfHome(), "token")
}

// TokenSource says where the token requests carry comes from, never the token itself: "HF_TOKEN",
// the path of a non-empty token file, or "" when there is none.
func TokenSource() string {
	if strings.TrimSpace(os.Getenv("HF_TOKEN")) != "" {
		return "HF_TOKEN"
	}
	if tokenFromEnv() != "" {
		return tokenFile()
	}
	return ""
}

// OfflineFromEnv reports whether HF_HUB_OFFLINE asks for no network.
func OfflineFromEnv() bool {
	switch strings.ToUpper(strings.TrimSpace(os.Getenv("HF_HUB_OFFLINE"))) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// settle fills the options' defaults from the environment.
func (o Options) settle() Options {
	if o.Revision == "" {
		o.Revision = "main"
	}
	if o.CacheDir == "" {
		o.CacheDir = CacheDir()
	}
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Token == "" {
		o.Token = tokenFromEnv()
	}
	o.Offline = o.Offline || OfflineFromEnv()
	if o.Client == nil {
		o.Client = defaultClient()
	}
	return o
}

// tokenFromEnv is $HF_TOKEN, else the token file huggingface_hub's login writes.
func tokenFromEnv() string {
	if t := os.Getenv("HF_TOKEN"); t != "" {
		return strings.TrimSpace(t)
	}
	b, err := os.ReadFile(tokenFile())
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Resolve returns the local directory holding model name: name itself when a file or directory
// of that name exists (a local path always wins), else the snapshot directory of the Hub model
// ORG/NAME at opts.Revision, from the cache when it is complete there, else downloaded into it.
func Resolve(ctx context.Context, name string, opts Options) (string, error) {
	if _, err := os.Stat(name); err == nil {
		return name, nil
	}
	if !IsRepoID(name) {
		return "", fmt.Errorf("%s: no such file or directory (and not a Hugging Face model name ORG/NAME)", name)
	}
	o := opts.settle()
	if !commitPattern.MatchString(o.Revision) && !safeRelPath(o.Revision) {
		return "", fmt.Errorf("revision %q is not a branch, tag or commit name", o.Revision)
	}
	r := newRepo(name, false, o)
	if dir, missing := r.cached(!o.Offline); missing == nil {
		return dir, nil
	} else if o.Offline {
		return "", fmt.Errorf("%s (revision %s) is not in the Hugging Face cache %s and HF_HUB_OFFLINE is set: %w", name, o.Revision, o.CacheDir, missing)
	}
	dir, err := r.download(ctx)
	if errors.Is(err, errUnreachable) {
		// As transformers does, a Hub out of reach falls back to a usable cached snapshot.
		if cached, missing := r.cached(false); missing == nil {
			return cached, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s (revision %s): %w", name, o.Revision, err)
	}
	return dir, nil
}

// repo is one model's or dataset's folder in the cache.
type repo struct {
	id      string
	dir     string // <cache>/models--ORG--NAME or <cache>/datasets--ORG--NAME
	dataset bool
	opts    Options
}

func newRepo(id string, dataset bool, o Options) repo {
	r := repo{id: id, dataset: dataset, opts: o}
	r.dir = filepath.Join(o.CacheDir, r.kind()+"s--"+strings.ReplaceAll(id, "/", "--"))
	return r
}

// kind is the repository type as the Hub's API and cache name it.
func (r *repo) kind() string {
	if r.dataset {
		return "dataset"
	}
	return "model"
}

// urlPrefix is the path the Hub puts before a dataset's id; models have none.
func (r *repo) urlPrefix() string {
	if r.dataset {
		return "/datasets"
	}
	return ""
}

func (r *repo) snapshot(commit string) string { return filepath.Join(r.dir, "snapshots", commit) }

// commit is the commit the revision names in the cache, "" when the cache has no ref for it.
func (r *repo) commit() (string, error) {
	rev := r.opts.Revision
	if commitPattern.MatchString(rev) {
		return rev, nil
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "refs", filepath.FromSlash(rev)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the cache has no %s (no refs/%s)", r.id, rev)
	} else if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(b))
	if !commitPattern.MatchString(c) {
		return "", fmt.Errorf("refs/%s holds %q, not a commit hash", rev, c)
	}
	return c, nil
}

// cached returns the cached snapshot when it holds config.json and all weights, else an error
// naming what is missing. That is all a model needs; but with whole set, a snapshot whose
// optional files were never looked for (neither present nor recorded absent in .no_exist) does
// not count, so that a download completes it.
func (r *repo) cached(whole bool) (string, error) {
	commit, err := r.commit()
	if err != nil {
		return "", err
	}
	snap := r.snapshot(commit)
	var missing []string
	if !exists(filepath.Join(snap, configFile)) {
		missing = append(missing, configFile)
	}
	shards, err := r.cachedWeights(snap)
	if err != nil {
		return "", err
	}
	for _, s := range shards {
		if !exists(filepath.Join(snap, filepath.FromSlash(s))) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("snapshots/%s lacks %s", commit, strings.Join(missing, ", "))
	}
	if whole {
		for _, f := range optionalFiles {
			if !exists(filepath.Join(snap, f)) && !exists(filepath.Join(r.dir, ".no_exist", commit, f)) {
				return "", fmt.Errorf("snapshots/%s has not looked for %s", commit, f)
			}
		}
	}
	return snap, nil
}

// cachedWeights names the weight files a snapshot needs: the shards of its index, else
// model.safetensors.
func (r *repo) cachedWeights(snap string) ([]string, error) {
	p := filepath.Join(snap, indexFile)
	if !exists(p) {
		return []string{weightsFile}, nil
	}
	b, err := modelfile.Read(p, modelfile.Index)
	if err != nil {
		return nil, err
	}
	return shardNames(b, p)
}

// shardNames lists the distinct files an index's weight_map names, refusing paths that would
// leave the snapshot.
func shardNames(b []byte, where string) ([]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: weight_map is empty", where)
	}
	seen := map[string]bool{}
	var names []string
	for tensor, f := range idx.WeightMap {
		if !safeRelPath(f) {
			return nil, fmt.Errorf("%s: weight_map[%q] = %q is not a file inside the model", where, tensor, f)
		}
		if !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	sort.Strings(names)
	return names, nil
}

// safeRelPath reports whether a file name from the network stays inside the snapshot.
func safeRelPath(f string) bool {
	if f == "" || strings.HasPrefix(f, "/") || strings.Contains(f, "\\") || strings.ContainsRune(f, 0) {
		return false
	}
	for _, part := range strings.Split(f, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Stat(p) // follows the symlink: a dangling one is missing
	return err == nil
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}
