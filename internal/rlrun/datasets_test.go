package rlrun

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/hub/hubtest"
)

// fakeHub is a Hugging Face Hub the environment points at, with an empty cache and no token.
func fakeHub(t *testing.T) *hubtest.Hub {
	t.Helper()
	h := hubtest.NewHub()
	t.Cleanup(h.Close)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "no-token"))
	return h
}

// An --eval-dataset naming the --dataset of several configs takes its config and commit, and
// keeps a config of its own.
func TestEvalDatasetTakesTheConfigOfTheSameDataset(t *testing.T) {
	h := fakeHub(t)
	b := []byte("PAR1 sums")
	files := map[string][]byte{"main/train-00000-of-00001.parquet": b, "main/test-00000-of-00001.parquet": b, "socratic/test-00000-of-00001.parquet": b}
	commit := h.AddDataset("org/gsm", "main", files)
	d := Dataset{Path: "org/gsm", EvalPath: "org/gsm", Hub: HubDataset{Config: "main"}}
	if err := d.locate(zerolog.Nop(), nil); err != nil {
		t.Fatal(err)
	}
	if want := (HubDataset{Split: "test", Config: "main", Commit: commit}); d.EvalHub != want || len(d.evalFiles) != 1 ||
		!strings.HasSuffix(d.evalFiles[0], filepath.Join(commit, "main", "test-00000-of-00001.parquet")) {
		t.Errorf("eval split %+v from %v, want %+v", d.EvalHub, d.evalFiles, want)
	}
	d = Dataset{Path: "org/gsm", EvalPath: "org/gsm", Hub: HubDataset{Config: "main"}, EvalHub: HubDataset{Config: "socratic"}}
	if err := d.locate(zerolog.Nop(), nil); err != nil || d.EvalHub.Config != "socratic" {
		t.Errorf("an eval config of its own: %+v, %v", d.EvalHub, err)
	}
}

// A Hub dataset whose card declares its configs is located by them, the default config when
// none is named, with the download's bytes on the progress writer; a config the card lacks is
// refused naming the flag, the card's configs and their splits.
func TestDatasetByNameReadsTheCardWithProgress(t *testing.T) {
	h := fakeHub(t)
	card := "---\nconfigs:\n- config_name: easy\n  data_files:\n  - split: train\n    path: easy/*.parquet\n  default: true\n" +
		"- config_name: hard\n  data_files: hard.parquet\n---\n"
	commit := h.AddDataset("org/sums", "main", map[string][]byte{
		"README.md": []byte(card), "easy/part-a.parquet": []byte("PAR1 easy"), "hard.parquet": []byte("PAR1 hard"),
	})
	var bar bytes.Buffer
	d := Dataset{Path: "org/sums"}
	if err := d.locate(zerolog.Nop(), &bar); err != nil {
		t.Fatal(err)
	}
	if want := (HubDataset{Split: "train", Config: "easy", Commit: commit}); d.Hub != want || len(d.files) != 1 ||
		!strings.HasSuffix(d.files[0], filepath.Join(commit, "easy", "part-a.parquet")) {
		t.Errorf("located %+v, %v; want %+v and easy/part-a.parquet", d.Hub, d.files, want)
	}
	if want := "9/9 (100%) | 9 B of 9 B | easy/part-a.parquet |"; !strings.Contains(bar.String(), want) {
		t.Errorf("progress %q, want %q", bar.String(), want)
	}
	d = Dataset{Path: "org/sums", Hub: HubDataset{Config: "medium"}}
	err := d.locate(zerolog.Nop(), nil)
	want := `--dataset org/sums (choose with --dataset-config, --dataset-split, --dataset-revision): dataset org/sums (revision main): no config "medium" in the dataset card (README.md) at commit ` +
		commit + "; its configs are easy (splits train), hard (splits train)"
	if err == nil || err.Error() != want {
		t.Errorf("an absent config: %v, want %q", err, want)
	}
}

// The reward spec takes env with a weight beside the verifiers; an environment run names
// nothing else by default, and a dataset run without one cannot name env.
func TestEnvRewardSpec(t *testing.T) {
	d := Dataset{Reward: "env:1,format:0.2", Options: DefaultDataset().Options}
	d.Options.FormatRegex = ".*"
	terms, cmd, err := d.verifiers(true)
	if err != nil || cmd != 0 || len(terms) != 2 || terms[0].Reward.Name() != "env" || terms[0].Weight != 1 ||
		terms[1].Reward.Name() != "format" || terms[1].Weight != 0.2 {
		t.Fatalf("env:1,format:0.2: %+v, cmd %v, %v", terms, cmd, err)
	}
	d = Dataset{}
	if terms, _, err = d.verifiers(true); err != nil || len(terms) != 1 || terms[0].Reward.Name() != "env" {
		t.Errorf("no --reward with episodes: %+v, %v; want env alone", terms, err)
	}
	if terms, _, err = d.verifiers(false); err != nil || len(terms) != 1 || terms[0].Reward.Name() != "exact" {
		t.Errorf("no --reward without episodes: %+v, %v; want exact", terms, err)
	}
	d.Reward = "env:2"
	if _, _, err = d.verifiers(false); err == nil || !strings.Contains(err.Error(), "--env") {
		t.Errorf("env without episodes: %v", err)
	}
}
