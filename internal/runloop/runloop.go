// Package runloop drives a trainer through its steps, with checkpoints, metrics and resumes.
//
// [Run] takes a [Trainer] from its current step to its last and, as [Options] ask, around the
// steps:
//   - saves a checkpoint every few steps, at the end, at a pause and on cancellation (a
//     cancelled run returns an [Interrupted] error);
//   - writes one JSON line of metrics per step, and a progress line;
//   - evaluates at a cadence;
//   - resumes a run directory's checkpoint, for a [Resumable] trainer.
//
// The trainers of nn/train and rl expose it as their Run methods; vkgrad's commands drive it
// with their own checkpoint and records through the hooks of [Options].
package runloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/rundir"
)

// Skipped is the metric of a step that changed nothing (a non-finite loss, say): when it is
// non-zero, neither evaluation nor a periodic checkpoint follows the step.
const Skipped = "skipped"

// Options say how Run drives a trainer.
type Options struct {
	// Dir, when set, holds the run: rundir.Checkpoint (every SaveEvery steps, at the end, at StopAt
	// and when the context is cancelled) and rundir.Metrics (one JSON object per step, with "step").
	// An existing checkpoint there is refused unless Resume is set. The trainer must be
	// Resumable.
	Dir string
	// SaveEvery is the number of steps between checkpoints; 0 saves only at the end, at
	// StopAt and on cancellation.
	SaveEvery int
	// Resume continues the checkpoint in Dir, when there is one, bit for bit; metric lines
	// written after it (by a run that crashed) are dropped.
	Resume bool
	// StopAt, when positive, pauses the run once this many steps are taken: Run saves and
	// returns nil short of the last step, for a resume to continue.
	StopAt int
	// Progress receives one line per step; nil writes none.
	Progress io.Writer
	// OnStep sees each step's metrics; an error from it ends the run (after a checkpoint).
	OnStep func(step int, metrics map[string]float64) error
	// Eval, when set, runs after every EvalEvery-th step but the last (Finish is the place
	// for the end's); an error from it ends the run.
	EvalEvery int
	Eval      func(step int) error
	// Finish, when set, runs once after the last step (or the step after which the trainer
	// stopped), given its number, before the final checkpoint: a closing evaluation there is
	// done again by a resume when the run dies during it.
	Finish func(step int) error
	// Save, when set, writes the checkpoint in place of Dir's: for a caller with its own
	// checkpoint contents, or a process of several of which one writes.
	Save func() error
	// AnyCancelled, when set, is asked before every step whether the run stops, given
	// whether this process's context was cancelled: processes that train together must all
	// stop at the same step, so each of them calls it (a collective) every step.
	AnyCancelled func(cancelled bool) (bool, error)
}

// Trainer is what Run drives.
type Trainer interface {
	// Step takes one training step and returns its number (1-based) and metrics; stop says the
	// trainer ended training on its own (its reason belongs in the metrics or the error).
	Step() (step int, metrics map[string]float64, stop bool, err error)
	// Steps is the number of steps taken.
	Steps() int
	// Done reports whether the last step was taken.
	Done() bool
}

// Resumable is a Trainer whose checkpoint Run keeps in a run directory (Options.Dir).
type Resumable interface {
	Trainer
	Save(path string) error
	// Restore continues from the checkpoint at path and returns its step.
	Restore(path string) (int, error)
}

// Interrupted is Run's error when the run was cancelled before its last step: the checkpoint
// was saved at Step unless SaveErr says otherwise.
type Interrupted struct {
	Step    int
	SaveErr error
	// Cause is the context's error, or ErrCancelledElsewhere.
	Cause error
}

// ErrCancelledElsewhere is the Cause of an interruption that came from another process (see
// Options.AnyCancelled).
var ErrCancelledElsewhere = errors.New("another process of the run was cancelled")

func (e *Interrupted) Error() string {
	if e.SaveErr != nil {
		return fmt.Sprintf("interrupted at step %d (%v), and saving failed: %v", e.Step, e.Cause, e.SaveErr)
	}
	return fmt.Sprintf("interrupted at step %d: %v", e.Step, e.Cause)
}

func (e *Interrupted) Unwrap() []error {
	if e.SaveErr != nil {
		return []error{e.Cause, e.SaveErr}
	}
	return []error{e.Cause}
}

// Run drives t to its last step. A cancelled context stops it before the next step, with a
// checkpoint, and returns an *Interrupted.
func Run(ctx context.Context, t Trainer, o Options) error {
	if err := o.check(t); err != nil {
		return err
	}
	metrics, err := openRun(t, o)
	if err != nil {
		return err
	}
	defer metrics.Close()
	r := &run{t: t, o: o, metrics: metrics}
	for !t.Done() {
		if o.StopAt > 0 && t.Steps() >= o.StopAt {
			return r.save()
		}
		if err := r.interruption(ctx); err != nil {
			return err
		}
		stop, err := r.step()
		if err != nil {
			return err
		}
		if stop {
			break
		}
	}
	if o.Finish != nil {
		if err := o.Finish(t.Steps()); err != nil {
			return err
		}
	}
	return r.save()
}

// check refuses options Run cannot follow.
func (o Options) check(t Trainer) error {
	if o.SaveEvery < 0 || o.StopAt < 0 || o.EvalEvery < 0 {
		return fmt.Errorf("save every %d steps, stop at %d, evaluate every %d: want >= 0 (0: off)", o.SaveEvery, o.StopAt, o.EvalEvery)
	}
	if o.EvalEvery > 0 && o.Eval == nil {
		return fmt.Errorf("evaluate every %d steps: no Eval function", o.EvalEvery)
	}
	if _, ok := t.(Resumable); o.Dir != "" && !ok {
		return fmt.Errorf("run directory %s: the trainer cannot save or restore a checkpoint", o.Dir)
	}
	return nil
}

// run is one call of Run.
type run struct {
	t       Trainer
	o       Options
	metrics *rundir.StepLog
}

// step takes one step and what follows it: the metrics line, progress, OnStep, and at their
// cadence evaluation and a checkpoint (the end saves the last step; a Skipped step has nothing
// new to evaluate or save).
func (r *run) step() (stop bool, err error) {
	step, m, stop, err := r.t.Step()
	if err != nil {
		return false, err
	}
	if err := r.metrics.Write(step, m); err != nil {
		return false, err
	}
	progress(r.o.Progress, step, m)
	if r.o.OnStep != nil {
		if err := r.o.OnStep(step, m); err != nil {
			return false, errors.Join(r.save(), err)
		}
	}
	if stop || r.t.Done() || m[Skipped] != 0 {
		return stop, nil
	}
	if every(r.o.EvalEvery, step) {
		if err := r.o.Eval(step); err != nil {
			return false, err
		}
	}
	if every(r.o.SaveEvery, step) {
		return false, r.save()
	}
	return false, nil
}

// every reports whether step falls on a cadence of n steps (0: never).
func every(n, step int) bool { return n > 0 && step%n == 0 }

// interruption saves and returns an *Interrupted when the run must stop before its next step.
func (r *run) interruption(ctx context.Context) error {
	cancelled := ctx.Err() != nil
	stop := cancelled
	if r.o.AnyCancelled != nil {
		var err error
		if stop, err = r.o.AnyCancelled(cancelled); err != nil {
			return err
		}
	}
	if !stop {
		return nil
	}
	cause := ctx.Err()
	if cause == nil {
		cause = ErrCancelledElsewhere
	}
	return &Interrupted{Step: r.t.Steps(), SaveErr: r.save(), Cause: cause}
}

// save makes the metrics durable, then writes the checkpoint: Options.Save's, else Dir's.
func (r *run) save() error {
	if err := r.metrics.Sync(); err != nil {
		return err
	}
	switch {
	case r.o.Save != nil:
		return r.o.Save()
	case r.o.Dir != "":
		return r.t.(Resumable).Save(filepath.Join(r.o.Dir, rundir.Checkpoint))
	}
	return nil
}

// progressKeys are the metrics a progress line shows, those a step has.
var progressKeys = []string{"loss", "reward", "kl", "grad_norm", "learning_rate"}

func progress(w io.Writer, step int, m map[string]float64) {
	if w == nil {
		return
	}
	line := fmt.Sprintf("step %d", step)
	for _, k := range progressKeys {
		if v, ok := m[k]; ok {
			line += fmt.Sprintf(" | %s %.4g", k, v)
		}
	}
	fmt.Fprintln(w, line)
}

// openRun opens o.Dir for t's run (check made sure a trainer with a run directory is
// Resumable).
func openRun(t Trainer, o Options) (*rundir.StepLog, error) {
	var restore func(string) (int, error)
	if r, ok := t.(Resumable); ok {
		restore = r.Restore
	}
	return rundir.OpenSteps(o.Dir, o.Resume, restore)
}
