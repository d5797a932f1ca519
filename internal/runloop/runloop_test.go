package runloop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rundir"
)

// counter is a trainer whose state is its step; Save writes it, Restore reads it back.
type counter struct {
	step, last, stopAt int
	saves              []int
}

func (c *counter) Step() (int, map[string]float64, bool, error) {
	c.step++
	return c.step, map[string]float64{"loss": 1 / float64(c.step), "odd": math.NaN()}, c.step == c.stopAt, nil
}

func (c *counter) Steps() int { return c.step }
func (c *counter) Done() bool { return c.step >= c.last }

func (c *counter) Save(path string) error {
	c.saves = append(c.saves, c.step)
	return os.WriteFile(path, []byte(fmt.Sprint(c.step)), 0o644)
}

func (c *counter) Restore(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	_, err = fmt.Sscan(string(b), &c.step)
	return c.step, err
}

func readLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundir.Metrics))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestSavesEveryNAndAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	c := &counter{last: 7}
	if err := Run(context.Background(), c, Options{Dir: dir, SaveEvery: 3}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.saves) != "[3 6 7]" {
		t.Errorf("saved at steps %v, want [3 6 7]", c.saves)
	}
	lines := readLines(t, dir)
	if len(lines) != 7 || lines[1] != `{"step":2,"loss":0.5,"odd":"NaN"}` {
		t.Errorf("metrics lines %q", lines)
	}
}

// A resume drops the lines written after the checkpoint (and a torn last line), so every step
// has one line.
func TestResumeTrimsLinesAfterTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rundir.Checkpoint), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := `{"step":1}` + "\n" + `{"step":2}` + "\n" + `{"step":3}` + "\n" + `{"step":4,"lo`
	if err := os.WriteFile(filepath.Join(dir, rundir.Metrics), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), &counter{last: 4}, Options{Dir: dir}); err == nil {
		t.Fatal("an existing checkpoint was overwritten without Resume")
	}
	c := &counter{last: 4}
	if err := Run(context.Background(), c, Options{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, dir)
	if len(lines) != 4 || lines[2] != `{"step":3,"loss":0.3333333333333333,"odd":"NaN"}` {
		t.Errorf("metrics lines after the resume %q", lines)
	}
}

func TestStopsOnItsOwnAndOnACallbackError(t *testing.T) {
	c := &counter{last: 10, stopAt: 4}
	dir := t.TempDir()
	if err := Run(context.Background(), c, Options{Dir: dir}); err != nil || c.step != 4 || fmt.Sprint(c.saves) != "[4]" {
		t.Errorf("a trainer that stops: %v at step %d, saves %v", err, c.step, c.saves)
	}
	boom := errors.New("boom")
	c = &counter{last: 10}
	err := Run(context.Background(), c, Options{Dir: t.TempDir(), OnStep: func(step int, _ map[string]float64) error {
		if step == 2 {
			return boom
		}
		return nil
	}})
	if !errors.Is(err, boom) || fmt.Sprint(c.saves) != "[2]" {
		t.Errorf("callback error: %v, saves %v; want the error and a checkpoint at step 2", err, c.saves)
	}
	if err := Run(context.Background(), &counter{last: 1}, Options{SaveEvery: -1}); err == nil {
		t.Error("a negative SaveEvery was accepted")
	}
}

// A metrics write that fails (a full disk) ends the run with the file named.
func TestMetricsWriteErrorStops(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, rundir.Metrics)); err != nil {
		t.Skip(err)
	}
	c := &counter{last: 3}
	err := Run(context.Background(), c, Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), rundir.Metrics) || c.step != 1 {
		t.Errorf("disk full: %v after %d steps", err, c.step)
	}
}

// StopAt pauses with a checkpoint; a resume continues to the end; a checkpoint falling on the
// last step is written once.
func TestStopAtPausesAndTheLastStepSavesOnce(t *testing.T) {
	dir := t.TempDir()
	c := &counter{last: 6}
	if err := Run(context.Background(), c, Options{Dir: dir, SaveEvery: 3, StopAt: 4}); err != nil {
		t.Fatal(err)
	}
	if c.step != 4 || fmt.Sprint(c.saves) != "[3 4]" {
		t.Errorf("paused at step %d with saves %v, want step 4 and saves [3 4]", c.step, c.saves)
	}
	c = &counter{last: 6}
	if err := Run(context.Background(), c, Options{Dir: dir, SaveEvery: 3, Resume: true, StopAt: 4}); err != nil {
		t.Fatal(err)
	}
	if c.step != 4 || fmt.Sprint(c.saves) != "[4]" {
		t.Errorf("resumed at the StopAt step: step %d, saves %v; want no step taken and one save", c.step, c.saves)
	}
	c = &counter{last: 6}
	if err := Run(context.Background(), c, Options{Dir: dir, SaveEvery: 3, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.saves) != "[6]" || len(readLines(t, dir)) != 6 {
		t.Errorf("resumed to the end: saves %v, %d metric lines; want [6] and 6", c.saves, len(readLines(t, dir)))
	}
}

// Eval runs at its cadence but not after the last step, where Finish runs before the final
// checkpoint; Save replaces the run directory's checkpoint.
func TestEvalFinishAndSaveHooks(t *testing.T) {
	var events []string
	c := &counter{last: 5}
	o := Options{
		SaveEvery: 2, EvalEvery: 1,
		Eval:   func(step int) error { events = append(events, fmt.Sprint("eval", step)); return nil },
		Finish: func(step int) error { events = append(events, fmt.Sprint("finish", step)); return nil },
		Save:   func() error { events = append(events, fmt.Sprint("save", c.step)); return nil },
	}
	if err := Run(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	want := "[eval1 eval2 save2 eval3 eval4 save4 finish5 save5]"
	if fmt.Sprint(events) != want {
		t.Errorf("events %v, want %s", events, want)
	}
	events = nil
	c = &counter{last: 5, stopAt: 2}
	if err := Run(context.Background(), c, o); err != nil || fmt.Sprint(events) != "[eval1 finish2 save2]" {
		t.Errorf("a trainer that stops at step 2: %v, events %v; want [eval1 finish2 save2]", err, events)
	}
	if err := Run(context.Background(), &counter{last: 1}, Options{EvalEvery: 1}); err == nil {
		t.Error("EvalEvery without Eval was accepted")
	}
}

// A cancelled context, here or (through AnyCancelled) in another process, saves and ends the
// run with an *Interrupted naming the step; a failed save is reported in it.
func TestInterruptions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &counter{last: 10}
	err := Run(ctx, c, Options{Dir: t.TempDir(), OnStep: func(step int, _ map[string]float64) error {
		if step == 3 {
			cancel()
		}
		return nil
	}})
	var in *Interrupted
	if !errors.As(err, &in) || in.Step != 3 || in.SaveErr != nil || !errors.Is(err, context.Canceled) || fmt.Sprint(c.saves) != "[3]" {
		t.Errorf("cancelled after step 3: %v (%+v), saves %v", err, in, c.saves)
	}
	asked := 0
	c = &counter{last: 10}
	full := errors.New("disk full")
	err = Run(context.Background(), c, Options{
		AnyCancelled: func(cancelled bool) (bool, error) { asked++; return cancelled || c.step == 2, nil },
		Save:         func() error { return full },
	})
	if !errors.As(err, &in) || in.Step != 2 || !errors.Is(err, ErrCancelledElsewhere) || !errors.Is(err, full) || asked != 3 {
		t.Errorf("cancelled elsewhere after step 2 with a failing save: %v, asked %d times", err, asked)
	}
}

// skipper skips (changes nothing at) its even steps.
type skipper struct{ counter }

func (s *skipper) Step() (int, map[string]float64, bool, error) {
	step, m, stop, err := s.counter.Step()
	if step%2 == 0 {
		m[Skipped] = 1
	}
	return step, m, stop, err
}

// A skipped step is neither evaluated nor saved at its cadence; the end still saves it.
func TestSkippedStepsAreNotEvaluatedNorSaved(t *testing.T) {
	var evals []int
	s := &skipper{counter{last: 6}}
	o := Options{Dir: t.TempDir(), SaveEvery: 1, EvalEvery: 1, Eval: func(step int) error { evals = append(evals, step); return nil }}
	if err := Run(context.Background(), s, o); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(evals) != "[1 3 5]" || fmt.Sprint(s.saves) != "[1 3 5 6]" {
		t.Errorf("evaluated at %v and saved at %v; want [1 3 5] and [1 3 5 6]", evals, s.saves)
	}
}
