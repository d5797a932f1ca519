package rlrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// The held-out accuracy before training depends only on the initial model, the held-out set
// and the evaluation settings, so it is kept in the user cache directory and a second run from
// the same --init reads it instead of measuring it again.
//
// The model is keyed by the SHA-256 of its files' contents, not by path, size and time: every
// checkpoint of one architecture has the same size, and copies (cp -p, rsync -t, tar) keep
// times, so only the content tells two models apart for certain. Reading a checkpoint that
// was just loaded costs a fraction of a second a GiB, against the minutes the evaluation takes.
// The binary is keyed by its version and its own hash, so a rebuilt vkgrad, whose numbers
// may differ, measures again.

// EvalKeyFormat changes when the entry's layout or the key's meaning does.
const EvalKeyFormat = "vkgrad-eval-cache-1"

// EvalKey is everything the held-out accuracy before training depends on; the SHA-256 of its
// JSON ([EvalKey.Hash]) names the cache entry.
type EvalKey struct {
	Format  string `json:"format"`
	Version string `json:"version"`
	Binary  string `json:"binary"` // SHA-256 of the running executable
	Model   string `json:"model"`  // SHA-256 of the initial model's files
	LoRA    any    `json:"lora"`   // the adapters' settings, as config.json keeps them
	Device  string `json:"device"`
	// Precision is the products' (--precision); absent for fp32, so fp32 keys are unchanged.
	Precision string `json:"precision,omitempty"`
	EOS       int    `json:"eos"`
	Vocab     int    `json:"tokenizer_vocab"`
	// Tasks holds the reward's specification (task options, dataset reward, verifiers) and
	// the evaluation's settings (size, seed, answer length, samples, width), as config.json
	// keeps them.
	Tasks       any         `json:"tasks"`
	Temperature float64     `json:"temperature"`
	HeldOut     []HeldOutID `json:"held_out"`
}

// HeldOutID is one held-out prompt as the evaluation sees it.
type HeldOutID struct {
	Text   string            `json:"text"`
	Tokens []int32           `json:"tokens"`
	Answer string            `json:"answer"`
	Meta   map[string]string `json:"meta"`
}

// Hash names the key's entry.
func (k EvalKey) Hash() (string, error) { return jsonSHA256(k) }

// evalCacheEntry is the file: the key it answers (checked on reading, so a file renamed or
// left by an older layout is not trusted) and the result with its own checksum.
type evalCacheEntry struct {
	Key    string         `json:"key"`
	Result *rl.EvalResult `json:"result"`
	SHA256 string         `json:"sha256"` // of Result's JSON
}

// EvalCache reads and writes held-out accuracies in Dir, one file per key; a nil *EvalCache
// caches nothing.
type EvalCache struct {
	Dir string
	// Log says when an entry is read, or is not trusted and measured again.
	Log zerolog.Logger
}

// EvalCacheDir is vkgrad's folder for held-out accuracies in the user cache directory.
func EvalCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "vkgrad", "eval"), nil
}

// jsonSHA256 is the hex SHA-256 of v's JSON encoding.
func jsonSHA256(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Get returns the entry of key, or measures it with measure and stores it. An entry that
// cannot be read whole and checked (n problems, its checksum, its key) is measured again,
// with a warning; a failure to store is a warning, never the run's error.
func (c *EvalCache) Get(key string, n int, measure func() (*rl.EvalResult, error)) (*rl.EvalResult, error) {
	path := filepath.Join(c.Dir, key+".json")
	res, err := readEvalEntry(path, key, n)
	switch {
	case err == nil:
		c.Log.Info().Str("cache", path).Msg("held-out accuracy before training from the cache (--no-eval-cache measures it again)")
		return res, nil
	case !errors.Is(err, fs.ErrNotExist):
		c.Log.Warn().Err(err).Msg("ignoring the cached held-out accuracy; measuring it again")
	}
	if res, err = measure(); err != nil || res == nil {
		return res, err
	}
	if err := writeEvalEntry(path, key, res); err != nil {
		c.Log.Warn().Err(err).Msg("could not cache the held-out accuracy before training")
	}
	return res, nil
}

// readEvalEntry reads the entry at path and checks it answers key with a result on n problems.
func readEvalEntry(path, key string, n int) (*rl.EvalResult, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var e evalCacheEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if e.Key != key {
		return nil, fmt.Errorf("%s: holds key %q, not its name's %q", path, e.Key, key)
	}
	if e.Result == nil {
		return nil, fmt.Errorf("%s: no result", path)
	}
	sum, err := jsonSHA256(e.Result)
	if err != nil || sum != e.SHA256 {
		return nil, fmt.Errorf("%s: the result does not match its checksum", path)
	}
	if err := checkEvalResult(e.Result, n); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e.Result, nil
}

// checkEvalResult refuses a result that is not one on n problems: a count that differs, or a
// share outside [0, 1] or not finite.
func checkEvalResult(r *rl.EvalResult, n int) error {
	if r.N != n {
		return fmt.Errorf("result on %d problems, want %d", r.N, n)
	}
	tasks := 0
	for name, t := range r.ByTask {
		for _, x := range []float64{t.Accuracy, t.SampledAccuracy, t.AccuracySE} {
			if !(x >= 0 && x <= 1) {
				return fmt.Errorf("task %q: a share of %v", name, x)
			}
		}
		tasks += t.N
	}
	for _, x := range []float64{r.Accuracy, r.SampledAccuracy, r.AccuracySE} {
		if !(x >= 0 && x <= 1) {
			return fmt.Errorf("a share of %v", x)
		}
	}
	if tasks != n || math.IsNaN(r.MeanReward) || math.IsInf(r.MeanReward, 0) {
		return fmt.Errorf("tasks' problems add up to %d of %d, mean reward %v", tasks, n, r.MeanReward)
	}
	return nil
}

// writeEvalEntry stores res under key atomically, with the umask's permissions.
func writeEvalEntry(path, key string, res *rl.EvalResult) error {
	sum, err := jsonSHA256(res)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(evalCacheEntry{Key: key, Result: res, SHA256: sum}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o666)
}

// ModelContentHash is the SHA-256 of the model at path: every file (name and content) of a
// Hugging Face directory (hfDir), else the checkpoint file path resolves to.
func ModelContentHash(path string, hfDir bool) (string, error) {
	if !hfDir {
		file, err := load.Resolve(path)
		if err != nil {
			return "", err
		}
		path = file
	}
	h := sha256.New()
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		return hashWhole(h, p)
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashWhole(h hash.Hash, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

// ExecutableHash is the SHA-256 of the running binary, computed once.
var ExecutableHash = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if err := hashWhole(h, exe); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

// beforeEvalCache is the cache for this run's figure before training, or nil (with the reason
// logged) when the figure must be measured: --no-eval-cache, no --init (a new model), a
// reward program (an outside command whose answers may change), several processes (they
// must all take the same path), or no user cache directory.
func (r *Run) beforeEvalCache() *EvalCache {
	why := ""
	switch {
	case r.Tasks.NoEvalCache:
		return nil
	case r.Init == "":
		return nil
	case r.Env.Active():
		why = "episodes in an environment are measured afresh"
	case r.Tasks.Data.RewardCmd != "":
		why = "a reward program (--reward-cmd) may answer differently from run to run"
	case r.Cluster.Comm() != nil:
		why = "a data-parallel job measures it on every process"
	}
	dir, err := EvalCacheDir()
	if err != nil && why == "" {
		why = err.Error()
	}
	if why != "" {
		r.Log.Debug().Str("why", why).Msg("held-out accuracy before training not cached")
		return nil
	}
	return &EvalCache{Dir: dir, Log: r.Log}
}

// evaluateBefore is the held-out accuracy of m, the initial model, before training: read from
// the cache when an earlier run measured it with the same model and settings, else measured
// and stored.
func (r *Run) evaluateBefore(m nn.LM) (*rl.EvalResult, error) {
	measure := func() (*rl.EvalResult, error) {
		return r.Setup.Evaluate(m, &r.Tasks, r.Family, r.EvalTemp, r.Cluster.Comm())
	}
	c := r.beforeEvalCache()
	if c == nil || len(r.Setup.HeldOut) == 0 {
		return measure()
	}
	key, err := r.beforeEvalKey()
	if err != nil {
		r.Log.Warn().Err(err).Msg("held-out accuracy before training not cached")
		return measure()
	}
	return c.Get(key, len(r.Setup.HeldOut), measure)
}

// beforeEvalKey fingerprints this run's figure before training.
func (r *Run) beforeEvalKey() (string, error) {
	model, err := initContentHash(r.Init)
	if err != nil {
		return "", fmt.Errorf("fingerprinting --init %s: %w", r.Init, err)
	}
	bin, err := ExecutableHash()
	if err != nil {
		return "", fmt.Errorf("fingerprinting vkgrad itself: %w", err)
	}
	k := EvalKey{Format: EvalKeyFormat, Version: r.Version, Binary: bin, Model: model, LoRA: r.LoRA, Device: r.Be.Name(),
		EOS: r.Family.EOS, Vocab: r.Family.Tok.VocabSize(), Temperature: r.EvalTemp}
	tasks := r.Tasks
	tasks.DataSeed, tasks.Shuffle = 0, false // the training stream's, not the held-out set's
	k.Tasks = tasks
	if r.Precision != "fp32" {
		k.Precision = r.Precision
	}
	for _, p := range r.Setup.HeldOut {
		k.HeldOut = append(k.HeldOut, HeldOutID{Text: p.Text, Tokens: r.Family.Tok.Encode(p.Text), Answer: p.Answer, Meta: p.Meta})
	}
	return k.Hash()
}

// initContentHash fingerprints the initial model at path, a checkpoint or a Hugging Face
// directory.
func initContentHash(path string) (string, error) {
	hf, err := load.IsLlamaDir(path)
	if err != nil {
		return "", err
	}
	return ModelContentHash(path, hf)
}
