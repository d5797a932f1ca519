package rlrun

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// What Put writes, readRunState reads back whole, and the trainer's own Meta keys stay.
func TestRunStateRoundTrip(t *testing.T) {
	sum := rl.NewSummary()
	sum.Add(&rl.StepReport{Step: 1, Metrics: map[string]float64{"reward_mean": 0.5, "kl_mean": 0.01}})
	want := RunState{Before: sampleEvalResult(), Summary: sum, Stopped: "kl above the cap"}
	st := &checkpoint.State{Meta: map[string]string{"trainer": "grpo"}}
	if err := want.Put(st); err != nil {
		t.Fatal(err)
	}
	if len(st.Meta) != 4 || st.Meta["trainer"] != "grpo" || st.Meta[MetaStopped] != "kl above the cap" {
		t.Fatalf("meta %v", st.Meta)
	}
	got, err := readRunState(st, "ck.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	// A run state with nothing set writes nothing.
	empty := &checkpoint.State{Meta: map[string]string{}}
	if err := (&RunState{}).Put(empty); err != nil || len(empty.Meta) != 0 {
		t.Fatalf("empty state wrote %v (err %v)", empty.Meta, err)
	}
}

// A damaged entry is an error naming the checkpoint and the key.
func TestReadRunStateNamesTheBadKey(t *testing.T) {
	st := &checkpoint.State{Meta: map[string]string{MetaSummary: "{"}}
	_, err := readRunState(st, "runs/x/checkpoint.bin")
	if err == nil || !strings.Contains(err.Error(), "runs/x/checkpoint.bin") || !strings.Contains(err.Error(), MetaSummary) {
		t.Fatalf("err %v, want one naming the checkpoint and %q", err, MetaSummary)
	}
}

// The log keeps the first n completions of each step; a resumed one drops the steps after the
// checkpoint before appending; n = 0 logs nothing and makes no file.
func TestCompletionLog(t *testing.T) {
	dir := t.TempDir()
	cs := []rl.Completion{{Prompt: "1+1=", Completion: "2", Reward: 1}, {Prompt: "1+2=", Completion: "4"}, {Prompt: "x", Completion: "y"}}
	l, err := OpenCompletionLog(dir, 2, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		if err := l.Write(step, cs); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, dir); n != 6 {
		t.Fatalf("%d lines after 3 steps of 2, want 6", n)
	}
	if l, err = OpenCompletionLog(dir, 2, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(2, cs[:1]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	raw, _ := os.ReadFile(filepath.Join(dir, "completions.jsonl"))
	want := `{"step":1,"prompt":"1+1=","completion":"2","reward":1,"rewards":null}` + "\n" +
		`{"step":1,"prompt":"1+2=","completion":"4","reward":0,"rewards":null}` + "\n" +
		`{"step":2,"prompt":"1+1=","completion":"2","reward":1,"rewards":null}` + "\n"
	if string(raw) != want {
		t.Fatalf("resumed log:\n%s\nwant:\n%s", raw, want)
	}
	none, err := OpenCompletionLog(t.TempDir(), 0, 0, false)
	if err != nil || none != nil || none.Write(1, cs) != nil || none.Sync() != nil || none.Close() != nil {
		t.Fatalf("n = 0: log %v, err %v", none, err)
	}
}

func countLines(t *testing.T, dir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "completions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(raw), "\n")
}

// ReadCheckpoint takes a run directory's checkpoint of its own command, and names what is
// wrong with any other: another command's, a model without trainer state, a missing file.
func TestReadCheckpoint(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 8, VocabSize: 30, PaddedVocabSize: 32, NumLayers: 1, NumHeads: 2, Channels: 8}
	save := func(meta map[string]string) string {
		dir := t.TempDir()
		st := &checkpoint.State{Config: cfg, Step: 2, Params: make([]float32, cfg.NumParams()), Meta: meta}
		if err := checkpoint.Save(filepath.Join(dir, load.RunCheckpoint), st); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	grpo := save(map[string]string{rl.MetaTrainer: "grpo"})
	l, err := ReadCheckpoint(grpo, "grpo")
	if err != nil || l.State.Step != 2 || l.Path != filepath.Join(grpo, load.RunCheckpoint) {
		t.Fatalf("own command: %v, %+v", err, l)
	}
	for _, c := range []struct{ dir, command, want string }{
		{grpo, "ppo", "is the checkpoint of a grpo run; continue it with vkgrad grpo --resume"},
		{save(map[string]string{}), "sft", "holds no sft trainer state"},
		{save(nil), "sft", "holds no sft trainer state"},
		{filepath.Join(t.TempDir(), "none"), "sft", "--resume: "},
	} {
		if _, err := ReadCheckpoint(c.dir, c.command); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as %s: err %v, want %q", c.dir, c.command, err, c.want)
		}
	}
}
