package train

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Run cancelled at step 4 and resumed from its directory ends with the parameters of an
// uninterrupted run, bit for bit.
func TestRunCancelAndResume(t *testing.T) {
	cfg := testConfig()
	straight := newTrainer(t, cfg)
	if err := straight.Run(context.Background(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	first := newTrainer(t, cfg)
	err := first.Run(ctx, RunOptions{Dir: dir, SaveEvery: 3, OnStep: func(step int, m map[string]float64) error {
		if step == 4 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || first.Step != 4 {
		t.Fatalf("cancelled run: %v at step %d", err, first.Step)
	}
	second := newTrainer(t, cfg)
	if err := second.Run(context.Background(), RunOptions{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := straight.Model.StateParams()
	b, _ := second.Model.StateParams()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d: %v resumed, %v straight", i, b[i], a[i])
		}
	}
}

// Run paused at StopAt (no closing evaluation), then resumed, validates at its cadence and at
// the end with the losses and parameters of a run that never paused.
func TestRunStopAtEvalAndFinish(t *testing.T) {
	cfg := testConfig()
	cfg.ValFraction = 0.2
	losses := func(tr *Trainer, got *[]string) RunOptions {
		eval := func(step int) error {
			v, err := tr.Evaluate()
			*got = append(*got, fmt.Sprintf("%d:%v", step, v))
			return err
		}
		return RunOptions{EvalEvery: 4, Eval: eval, Finish: eval}
	}
	var want, got []string
	straight := newTrainer(t, cfg)
	if err := straight.Run(context.Background(), losses(straight, &want)); err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || !strings.HasPrefix(want[2], "10:") {
		t.Fatalf("evaluations of a straight run: %v, want after steps 4, 8 and 10", want)
	}
	dir := t.TempDir()
	first := newTrainer(t, cfg)
	o := losses(first, &got)
	o.Dir, o.StopAt = dir, 6
	if err := first.Run(context.Background(), o); err != nil || first.Step != 6 || len(got) != 1 {
		t.Fatalf("paused run: %v at step %d, evaluations %v", err, first.Step, got)
	}
	second := newTrainer(t, cfg)
	o = losses(second, &got)
	o.Dir, o.Resume = dir, true
	if err := second.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("evaluations paused and resumed %v, straight %v", got, want)
	}
	a, _ := straight.Model.StateParams()
	b, _ := second.Model.StateParams()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d: %v resumed, %v straight", i, b[i], a[i])
		}
	}
}
