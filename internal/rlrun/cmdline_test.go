package rlrun

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
)

// mapFlags are flags over a map of settings, as a command binds its flags to a resumed run's.
type mapFlags map[string]string

func (m mapFlags) Value(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

func (m mapFlags) Set(name, value string) error {
	if _, err := strconv.Atoi(value); err != nil {
		return fmt.Errorf("invalid argument %q", value)
	}
	m[name] = value
	return nil
}

// A resume keeps the run's cadence for the flags not given again, and takes those given.
func TestCarryOver(t *testing.T) {
	saved := &RunOptions{EvalEvery: 10, SaveEvery: 20, StopAt: 30, LogCompletions: 4}
	o := RunOptions{EvalEvery: 0, SaveEvery: 5, StopAt: 7, Resume: "runs/a", LogCompletions: 0}
	carryOver(&o, saved, map[string]string{"save-every": "5"})
	want := RunOptions{EvalEvery: 10, SaveEvery: 5, StopAt: 7, Resume: "runs/a", LogCompletions: 4}
	if o != want {
		t.Errorf("carried over %+v, want %+v", o, want)
	}
	// A run saved before the run options were kept changes nothing.
	o2 := RunOptions{SaveEvery: 100}
	carryOver(&o2, nil, nil)
	if o2 != (RunOptions{SaveEvery: 100}) {
		t.Errorf("nothing saved: %+v", o2)
	}
}

// A flag given on a resume must agree with the run's setting, the error naming it and the run
// to start afresh from; --steps and the command's own may-change flags are set; flags that are
// no settings of the run (the machine's, the run loop's) pass.
func TestCheckGiven(t *testing.T) {
	saved := mapFlags{"task": "addition", "steps": "100", "check-every": "25", "lr": "0.001"}
	err := checkGiven(map[string]string{"lr": "0.002", "device": "cpu"}, saved, nil, "runs/a")
	want := "--lr 0.002: the run was made with --lr 0.001, which cannot change when resuming (the continued run would no longer match an uninterrupted one); start a new run with --init runs/a instead"
	if err == nil || err.Error() != want {
		t.Errorf("changed --lr: %v, want %s", err, want)
	}
	given := map[string]string{"task": "addition", "steps": "200", "check-every": "5", "device": "cpu", "save-every": "3"}
	if err := checkGiven(given, saved, []string{"check-every"}, "runs/a"); err != nil {
		t.Fatal(err)
	}
	if saved["steps"] != "200" || saved["check-every"] != "5" {
		t.Errorf("the flags a resume may change were not set: %v", saved)
	}
	// Without the command's leave, its flag must agree too.
	if err := checkGiven(map[string]string{"check-every": "6"}, saved, nil, "runs/a"); err == nil {
		t.Error("--check-every changed without leave")
	}
	// A value a may-change flag cannot take names the flag.
	err = checkGiven(map[string]string{"steps": "x"}, saved, nil, "runs/a")
	if err == nil || err.Error() != `--steps: invalid argument "x"` {
		t.Errorf("bad --steps: %v", err)
	}
	// The first conflicting flag by name is the one named.
	err = checkGiven(map[string]string{"task": "copy", "lr": "1"}, saved, nil, "runs/a")
	if err == nil || err.Error()[:len("--lr 1:")] != "--lr 1:" {
		t.Errorf("two conflicts: %v", err)
	}
}

// A config error naming a setting names its flag where the command has one.
func TestFlagNamed(t *testing.T) {
	defined := map[string]bool{"group-size": true, "max-turns": true}
	for _, c := range []struct{ in, want string }{
		{"group_size 0: want >= 1", "--group-size 0: want >= 1"},
		{"max_turns -1: want >= 1", "--max-turns -1: want >= 1"},
		{"prompts_per_step 0: want >= 1", "prompts_per_step 0: want >= 1"},
		{"rollout: no prompts", "rollout: no prompts"},
		{"group_size", "group_size"},
	} {
		if got := FlagNamed(errors.New(c.in), defined).Error(); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// Episode flags without an environment are refused, named in order; an environment's settings
// are checked, naming the flag.
func TestEnvCheck(t *testing.T) {
	none := DefaultEnv()
	err := none.Check(map[string]string{"max-turns": "3", "device": "cpu", "env-workers": "2"}, nil)
	if err == nil || err.Error()[:len("--env-workers, --max-turns shape multi-turn episodes: give --env NAME (")] != "--env-workers, --max-turns shape multi-turn episodes: give --env NAME (" {
		t.Errorf("episode flags without --env: %v", err)
	}
	if err := none.Check(map[string]string{"device": "cpu"}, nil); err != nil {
		t.Errorf("no episode flags: %v", err)
	}
	both := DefaultEnv()
	both.Name, both.Cmd = "calc", "./env.sh"
	if err := both.Check(nil, nil); err == nil || err.Error() != "--env calc and --env-cmd: give one environment" {
		t.Errorf("--env and --env-cmd: %v", err)
	}
	workers := DefaultEnv()
	workers.Cmd, workers.Workers = "./env.sh", 0
	if err := workers.Check(nil, nil); err == nil || err.Error() != "--env-workers 0: want >= 1" {
		t.Errorf("no workers: %v", err)
	}
	unknown := DefaultEnv()
	unknown.Name = "no-such-env"
	if err := unknown.Check(nil, nil); err == nil || err.Error()[:len("--env: ")] != "--env: " {
		t.Errorf("unknown environment: %v", err)
	}
	bad := DefaultEnv()
	bad.Cmd = "./env.sh"
	bad.Limits.MaxTurns = 0
	if err := bad.Check(nil, map[string]bool{"max-turns": true}); err == nil || err.Error() != "--max-turns 0: want >= 1" {
		t.Errorf("bad limits: %v", err)
	}
	if err := bad.Check(nil, nil); err == nil || err.Error() != "max_turns 0: want >= 1" {
		t.Errorf("bad limits, no such flag: %v", err)
	}
}

// fakeTrainer records what Restore is given.
type fakeTrainer struct {
	restored *checkpoint.State
	err      error
}

func (f *fakeTrainer) Checkpoint() (*checkpoint.State, error)     { return nil, nil }
func (f *fakeTrainer) CheckpointView() (*checkpoint.State, error) { return nil, nil }
func (f *fakeTrainer) CheckReplicas() error                       { return nil }
func (f *fakeTrainer) Restore(st *checkpoint.State, _ string) error {
	f.restored = st
	return f.err
}

// restore continues a run with steps left, and refuses one that ended or has none to take.
func TestRestore(t *testing.T) {
	var r Run
	if err := r.restore(&fakeTrainer{}, 10); err != nil {
		t.Fatalf("a new run: %v", err)
	}
	st := &checkpoint.State{Step: 40}
	r.Resumed = &Resumed{Loaded: &load.Loaded{Path: "runs/a/checkpoint.bin", State: st}}
	err := r.restore(&fakeTrainer{}, 40)
	if want := "--resume runs/a/checkpoint.bin: the run has taken 40 of --steps 40; pass a larger --steps to continue it"; err == nil || err.Error() != want {
		t.Errorf("no steps left: %v, want %s", err, want)
	}
	tr := &fakeTrainer{}
	if err := r.restore(tr, 41); err != nil || tr.restored != st {
		t.Errorf("restored %v: %v", tr.restored, err)
	}
	if err := r.restore(&fakeTrainer{err: errors.New("shape")}, 41); err == nil || err.Error() != "--resume: shape" {
		t.Errorf("a failed restore: %v", err)
	}
	r.Resumed.Stopped = "kl above the cap"
	err = r.restore(&fakeTrainer{}, 100)
	if want := "--resume runs/a/checkpoint.bin: the run ended at step 40 (kl above the cap); start a new run from it with --init"; err == nil || err.Error() != want {
		t.Errorf("an ended run: %v, want %s", err, want)
	}
}
