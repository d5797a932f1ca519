package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
)

// serveTinyDataset publishes org/tiny on a fake Hub the environment points at, its train and
// test splits the Parquet files train and test, with an empty cache; it returns the Hub, the
// cache and the commit.
func serveTinyDataset(t *testing.T, train, test string) (*hubtest.Hub, string, string) {
	t.Helper()
	files := map[string][]byte{"README.md": []byte("# tiny sums\n")}
	for name, p := range map[string]string{"data/train-00000-of-00001.parquet": train, "data/test-00000-of-00001.parquet": test} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	h := hubtest.NewHub()
	t.Cleanup(h.Close)
	commit := h.AddDataset("org/tiny", "main", files)
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "no-token"))
	return h, cache, commit
}

// An sft run on a Hub dataset by name trains as on the same Parquet files given by path, bit
// for bit; its config.json records the split, config and commit, and a resume reads that
// commit though the branch moved on, and refuses a cached file that changed since, the Hub
// gone.
func TestDatasetByNameFromTheHub(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	train, test := filepath.Join(dir, "train.parquet"), filepath.Join(dir, "test.parquet")
	writeSumsParquet(t, train, 12)
	writeSumsParquet(t, test, 4)
	h, cache, commit := serveTinyDataset(t, train, test)
	sftRun := func(data, eval, runDir string, more ...string) (string, error) {
		args := []string{"sft", "--init", sft, "--steps", "2", "--batch", "2", "--stop-at-accuracy", "0", "--eval-samples", "0",
			"--dataset", data, "--eval-dataset", eval, "--run-dir", runDir}
		return runCLI(append(append(args, more...), rlCommon...)...)
	}
	local := filepath.Join(dir, "local")
	if out, err := sftRun(train, test, local); err != nil {
		t.Fatalf("sft on the files: %v\n%s", err, out)
	}
	byName := filepath.Join(dir, "by-name")
	if out, err := sftRun("org/tiny", "org/tiny", byName, "--stop-at", "1"); err != nil {
		t.Fatalf("sft --dataset org/tiny: %v\n%s", err, out)
	}
	if got := strings.Join(h.Downloads(), " "); got != "README.md data/train-00000-of-00001.parquet data/test-00000-of-00001.parquet" {
		t.Errorf("downloaded %s, want the card, then the train and the test file, once each", got)
	}
	var meta struct {
		Tasks struct{ Data rlrun.Dataset } `json:"tasks"`
	}
	b, err := os.ReadFile(filepath.Join(byName, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	d := meta.Tasks.Data
	if d.Path != "org/tiny" || d.EvalPath != "org/tiny" || d.Hub != (rlrun.HubDataset{Split: "train", Config: "default", Commit: commit}) ||
		d.EvalHub != (rlrun.HubDataset{Split: "test", Config: "default", Commit: commit}) {
		t.Errorf("config.json keeps %+v, want org/tiny's train and test splits of config default at commit %s", d, commit)
	}

	moved := map[string][]byte{"data/train.jsonl": []byte(`{"prompt": "1 + 1 =", "answer": " 2"}` + "\n")}
	h.AddDataset("org/tiny", "main", moved)
	if out, err := runCLI(append([]string{"sft", "--resume", byName}, rlCommon...)...); err != nil {
		t.Fatalf("resuming after main moved on: %v\n%s", err, out)
	}
	sameRun(t, "sft", local, byName, 2)

	h.Close()

	blobs, err := filepath.Glob(filepath.Join(cache, "datasets--org--tiny", "snapshots", commit, "data", "*.parquet"))
	if err != nil || len(blobs) != 2 {
		t.Fatalf("cached data files %v, %v; want 2", blobs, err)
	}
	writeSumsParquet(t, train, 13)
	for _, blob := range blobs {
		b, _ := os.ReadFile(train)
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = runCLI(append([]string{"sft", "--resume", byName, "--steps", "3"}, rlCommon...)...)
	if err == nil || !strings.Contains(err.Error(), "--dataset org/tiny changed since the run started") {
		t.Errorf("resuming over a changed cached file: %v", err)
	}
}

// A split or config the dataset lacks, and split flags beside a local file, fail naming the
// flag and what there is; offline with an empty cache says so.
func TestFaultDatasetByNameErrors(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.parquet")
	writeSumsParquet(t, train, 4)
	serveTinyDataset(t, train, train)
	base := []string{"sft", "--steps", "1", "--run-dir", filepath.Join(dir, "run"), "--device", "cpu", "-q"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", "org/tiny", "--dataset-split", "validation"}, `--dataset org/tiny (choose with --dataset-config, --dataset-split, --dataset-revision): dataset org/tiny (revision main): config default has no split "validation"`},
		{[]string{"--dataset", "org/tiny", "--dataset-split", "validation"}, "its splits are test, train"},
		{[]string{"--dataset", "org/tiny", "--dataset-config", "main"}, `no config "main" at commit`},
		{[]string{"--dataset", "org/absent"}, "dataset org/absent not found on"},
		{[]string{"--dataset", train, "--dataset-split", "test"}, "--dataset-split test: --dataset " + train + " is a local file"},
	} {
		_, err := runCLI(append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	_, err := runCLI(append(base, "--dataset", "org/tiny")...)
	if err == nil || !strings.Contains(err.Error(), "--dataset org/tiny (choose with --dataset-config, --dataset-split, --dataset-revision): dataset org/tiny (revision main) is not usable from the Hugging Face cache") ||
		!strings.Contains(err.Error(), "HF_HUB_OFFLINE is set") {
		t.Errorf("offline with an empty cache: %v", err)
	}
}
