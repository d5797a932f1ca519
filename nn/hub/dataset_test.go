package hub

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
)

const gsmID = "org/gsm-tiny"

// gsmFiles are shaped as GSM8K publishes its two configs, main and socratic, with a card that
// declares no configs, so the files' names tell them.
func gsmFiles() map[string][]byte {
	return map[string][]byte{
		"README.md":                             []byte("---\nlicense: mit\n---\n# GSM tiny\n"),
		".gitattributes":                        []byte("*.parquet filter=lfs\n"),
		"main/train-00000-of-00002.parquet":     []byte("PAR1 main train 0"),
		"main/train-00001-of-00002.parquet":     []byte("PAR1 main train 1"),
		"main/test-00000-of-00001.parquet":      []byte("PAR1 main test"),
		"socratic/train-00000-of-00001.parquet": []byte("PAR1 socratic train"),
		"socratic/test-00000-of-00001.parquet":  []byte("PAR1 socratic test"),
	}
}

func newDatasetHub(t *testing.T) *hubtest.Hub {
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "no-token"))
	h := hubtest.NewHub()
	t.Cleanup(h.Close)
	return h
}

func hubOpts(h *hubtest.Hub, cache string) Options {
	return Options{CacheDir: cache, Endpoint: h.URL, Client: &http.Client{Timeout: 30 * time.Second}}
}

// relFiles names resolved files by their path in the snapshot.
func relFiles(t *testing.T, d *DatasetFiles) []string {
	t.Helper()
	var out []string
	for _, f := range d.Files {
		i := strings.Index(f, d.Commit+string(filepath.Separator))
		if i < 0 {
			t.Fatalf("%s is not in snapshot %s", f, d.Commit)
		}
		out = append(out, filepath.ToSlash(f[i+len(d.Commit)+1:]))
	}
	return out
}

// A GSM8K-shaped dataset's config and split are downloaded alone, in shard order, into the
// cache layout; afterwards they resolve from the cache with the Hub out of reach or offline,
// where a split never fetched is missing.
func TestDatasetDownloadsTheSplitAlone(t *testing.T) {
	h := newDatasetHub(t)
	files := gsmFiles()
	commit := h.AddDataset(gsmID, "main", files)
	cache := t.TempDir()
	d, err := ResolveDataset(context.Background(), gsmID, "main", "train", hubOpts(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"main/train-00000-of-00002.parquet", "main/train-00001-of-00002.parquet"}
	if got := relFiles(t, d); !reflect.DeepEqual(got, want) || d.Commit != commit || d.Config != "main" || d.Split != "train" || d.Revision != "main" {
		t.Fatalf("resolved %+v (%v), want %v at %s", d, got, want, commit)
	}
	if got := h.Downloads(); !reflect.DeepEqual(got, append([]string{"README.md"}, want...)) {
		t.Errorf("downloaded %v, want only the card and %v", got, want)
	}
	repo := filepath.Join(cache, "datasets--org--gsm-tiny")
	if ref, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err != nil || string(ref) != commit {
		t.Errorf("refs/main = %q, %v; want %s", ref, err, commit)
	}
	for i, f := range d.Files {
		target, err := os.Readlink(f)
		if wantT := filepath.Join("..", "..", "..", "blobs", hubtest.ETag(want[i], files[want[i]])); err != nil || target != wantT {
			t.Errorf("%s links to %q (%v), want %s", want[i], target, err, wantT)
		}
		if b, err := os.ReadFile(f); err != nil || string(b) != string(files[want[i]]) {
			t.Errorf("%s holds %q (%v)", want[i], b, err)
		}
	}

	h.Close()
	again, err := ResolveDataset(context.Background(), gsmID, "main", "train", hubOpts(h, cache))
	if err != nil || !reflect.DeepEqual(again, d) {
		t.Fatalf("the Hub out of reach: %+v, %v; want the cached %+v", again, err, d)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	again, err = ResolveDataset(context.Background(), gsmID, "main", "train", hubOpts(h, cache))
	if err != nil || !reflect.DeepEqual(again, d) {
		t.Fatalf("offline: %+v, %v; want %+v", again, err, d)
	}
	if _, err := ResolveDataset(context.Background(), gsmID, "main", "test", hubOpts(h, cache)); err == nil ||
		!strings.Contains(err.Error(), `no split "test"`) || !strings.Contains(err.Error(), "its splits are train") {
		t.Errorf("offline, a split never downloaded: %v", err)
	}
}

// A cache filled as huggingface_hub fills it resolves offline by name, defaulting to the
// dataset's only config.
func TestDatasetFromTheHuggingFaceCacheOffline(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	cache := t.TempDir()
	files := map[string][]byte{
		"main/train-00000-of-00001.parquet": []byte("PAR1 train"),
		"main/test-00000-of-00001.parquet":  []byte("PAR1 test"),
	}
	snap, err := hubtest.StoreDataset(cache, gsmID, "main", files)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ResolveDataset(context.Background(), gsmID, "", "test", Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(snap, "main", "test-00000-of-00001.parquet")}
	if !reflect.DeepEqual(d.Files, want) || d.Config != "main" || d.Commit != filepath.Base(snap) {
		t.Errorf("resolved %+v, want %v in config main", d, want)
	}
}

// A split the dataset lacks lists the splits; an ambiguous or unknown config lists the configs.
func TestFaultDatasetSplitAndConfigErrors(t *testing.T) {
	h := newDatasetHub(t)
	h.AddDataset(gsmID, "main", gsmFiles())
	cache := t.TempDir()
	for _, c := range []struct{ config, split, want string }{
		{"main", "validation", `config main has no split "validation" at commit `},
		{"main", "validation", "; its splits are test, train"},
		{"", "train", "the dataset has configs main, socratic at commit"},
		{"", "train", ": name one"},
		{"other", "train", `no config "other" at commit`},
		{"other", "train", "the configs are main, socratic"},
	} {
		_, err := ResolveDataset(context.Background(), gsmID, c.config, c.split, hubOpts(h, cache))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %q split %q: %v, want %q", c.config, c.split, err, c.want)
		}
	}
	if got := h.Downloads(); !reflect.DeepEqual(got, []string{"README.md"}) {
		t.Errorf("failed resolutions downloaded %v, want only the card", got)
	}
}

// A dataset whose files are in no format read directly (a loading script and CSV) is read from
// the Hub's Parquet conversion, partial- splits included; the conversion's ref is cached
// under refs/refs/convert/parquet, as huggingface_hub names it, and serves offline.
func TestDatasetFallsBackToTheParquetConversion(t *testing.T) {
	h := newDatasetHub(t)
	h.AddDataset(gsmID, "main", map[string][]byte{"gsm.py": []byte("# script"), "train.csv": []byte("q,a\n")})
	conv := map[string][]byte{
		"default/train/0000.parquet":        []byte("PAR1 0"),
		"default/train/0001.parquet":        []byte("PAR1 1"),
		"default/partial-test/0000.parquet": []byte("PAR1 t"),
	}
	commit := h.AddDataset(gsmID, ConvertedRevision, conv)
	cache := t.TempDir()
	for _, c := range []struct {
		split string
		want  []string
	}{
		{"train", []string{"default/train/0000.parquet", "default/train/0001.parquet"}},
		{"test", []string{"default/partial-test/0000.parquet"}},
	} {
		d, err := ResolveDataset(context.Background(), gsmID, "", c.split, hubOpts(h, cache))
		if err != nil {
			t.Fatal(err)
		}
		if got := relFiles(t, d); !reflect.DeepEqual(got, c.want) || d.Revision != ConvertedRevision || d.Commit != commit || d.Config != "default" {
			t.Errorf("%s: %+v (%v), want %v at %s of %s", c.split, d, got, c.want, ConvertedRevision, commit)
		}
	}
	ref, err := os.ReadFile(filepath.Join(cache, "datasets--org--gsm-tiny", "refs", "refs", "convert", "parquet"))
	if err != nil || string(ref) != commit {
		t.Errorf("the conversion's ref = %q, %v; want %s", ref, err, commit)
	}
	h.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	d, err := ResolveDataset(context.Background(), gsmID, "", "train", hubOpts(h, cache))
	if err != nil || d.Commit != commit || len(d.Files) != 2 {
		t.Errorf("offline from the cached conversion: %+v, %v", d, err)
	}
}

// Offline with an empty cache says the dataset is not cached and HF_HUB_OFFLINE is set; a
// cache missing a shard is refused rather than read short.
func TestFaultDatasetOfflineWithoutTheFiles(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	cache := t.TempDir()
	_, err := ResolveDataset(context.Background(), gsmID, "", "train", Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "dataset org/gsm-tiny (revision main) is not usable from the Hugging Face cache") ||
		!strings.Contains(err.Error(), "HF_HUB_OFFLINE is set") || !strings.Contains(err.Error(), "no refs/main") {
		t.Errorf("an empty cache offline: %v", err)
	}
	files := gsmFiles()
	delete(files, "main/train-00001-of-00002.parquet")
	if _, err := hubtest.StoreDataset(cache, gsmID, "main", files); err != nil {
		t.Fatal(err)
	}
	_, err = ResolveDataset(context.Background(), gsmID, "main", "train", Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "holds 1 of the 2 shards of train") {
		t.Errorf("a cached split missing a shard: %v", err)
	}
}

// Split words are read from folder and file names as the datasets library reads them.
func TestSplitOfFileNames(t *testing.T) {
	for rel, want := range map[string]string{
		"train-00000-of-00002.parquet": "train",
		"extra-00003-of-00010.parquet": "extra",
		"test.jsonl":                   "test",
		"my_valid_file.json":           "validation",
		"dev.jsonl":                    "validation",
		"train/0000.parquet":           "train",
		"partial-test/0000.parquet":    "test",
		"eval.parquet":                 "test",
		"trainset.jsonl":               "",
		"data.jsonl":                   "",
	} {
		if got := splitOf(rel); got != want {
			t.Errorf("splitOf(%q) = %q, want %q", rel, got, want)
		}
	}
	d, err := chooseSplit(dataFiles([]string{"README.md", "dataset_infos.json", "all.jsonl", "more.parquet", "x.csv"}), "", "train", "here")
	if err != nil || !reflect.DeepEqual(d.Files, []string{"all.jsonl", "more.parquet"}) || d.Config != DefaultConfig {
		t.Errorf("files naming no split: %+v, %v; want both data files as the default config's train split", d, err)
	}
}
