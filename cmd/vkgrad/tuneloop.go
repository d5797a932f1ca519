package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/rl"
)

// interruptSignals end a run with a checkpoint: Ctrl-C and SIGTERM (what schedulers and
// container runtimes send before killing a job).
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// interruptContext is cancelled by Ctrl-C or SIGTERM.
func interruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), interruptSignals...)
}

// afterStepHook, when set (by tests), runs after each training step with the run's interrupt
// context.
var afterStepHook func(ctx context.Context, step int)

// testStepHook is the commands' OnStep for the run loop: it calls afterStepHook.
func testStepHook(ctx context.Context) func(int, map[string]float64) error {
	return func(step int, _ map[string]float64) error {
		if afterStepHook != nil {
			afterStepHook(ctx, step)
		}
		return nil
	}
}

// tuneLoop is an sft, grpo or ppo run from its first step to its last: the hooks it gives the
// run loop, and what they record for the end of the run.
type tuneLoop struct {
	*rlRun
	command string
	policy  rl.Policy
	trainer checkpointer
	last    int // --steps
	state   *rlrun.RunState
	bar     *progress.Bar
	// after is the held-out accuracy after the last step; finished says the run got there (or
	// its trainer stopped it) rather than pausing at --stop-at.
	after    *rl.EvalResult
	finished bool
}

// newTuneLoop starts the loop's state: a resumed run's, else the held-out accuracy before
// training (summary, when not nil, accumulates the steps of grpo and ppo).
func (r *rlRun) newTuneLoop(command string, m rl.Policy, tr checkpointer, last int, summary *rl.Summary) (*tuneLoop, error) {
	rs := &rlrun.RunState{Summary: summary}
	if r.resumed != nil {
		rs.Before = r.resumed.Before
		if r.resumed.Summary != nil {
			rs.Summary = r.resumed.Summary
		}
	} else {
		var err error
		if rs.Before, err = r.evaluateBefore(m); err != nil {
			return nil, err
		}
		logEval(r.log, r.metrics, 0, "before", rs.Before)
	}
	out := io.Writer(os.Stderr)
	if !r.cluster.Main() { // rank 0 shows the job's progress
		out = io.Discard
	}
	return &tuneLoop{rlRun: r, command: command, policy: m, trainer: tr, last: last, state: rs,
		bar: progress.New(out, last)}, nil
}

// run drives steps to the end through the run loop, then tells a paused run how to continue
// (on stdout) and an interrupted one (as the command's error).
func (l *tuneLoop) run(ctx context.Context, steps runloop.Trainer) error {
	err := runloop.Run(ctx, steps, runloop.Options{
		SaveEvery: l.opts.SaveEvery, StopAt: l.opts.StopAt, EvalEvery: l.opts.EvalEvery, Eval: l.evalDuring,
		Finish: l.evalAfter, Save: l.saveCheckpoint, AnyCancelled: l.cluster.AnyStop,
		OnStep: testStepHook(ctx),
	})
	l.bar.Clear()
	var in *runloop.Interrupted
	switch {
	case errors.As(err, &in) && in.SaveErr != nil:
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted, and saving failed: %w", in.SaveErr)}
	case errors.As(err, &in):
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted at step %d of %d; saved %s; continue with: vkgrad %s --resume %s", in.Step, l.last, l.checkpointPath(), l.command, l.runDir)}
	case err == nil && !l.finished:
		fmt.Fprintf(stdout, "stopped at step %d of %d; saved %s; continue with: vkgrad %s --resume %s\n", steps.Steps(), l.last, l.checkpointPath(), l.command, l.runDir)
	}
	return err
}

func (l *tuneLoop) checkpointPath() string { return filepath.Join(l.runDir, rundir.Checkpoint) }

// evalDuring measures the held-out accuracy every --eval-every steps.
func (l *tuneLoop) evalDuring(step int) error {
	e, err := l.setup.Evaluate(l.policy, &l.tasks, l.family, l.evalTemp, l.cluster.Comm())
	if err != nil {
		return err
	}
	l.bar.Clear()
	logEval(l.log, l.metrics, step, "during", e)
	return nil
}

// evalAfter measures the held-out accuracy after the last step, before the final checkpoint.
func (l *tuneLoop) evalAfter(step int) error {
	l.bar.Clear()
	after, err := l.setup.Evaluate(l.policy, &l.tasks, l.family, l.evalTemp, l.cluster.Comm())
	if err != nil {
		return err
	}
	l.after, l.finished = after, true
	logEval(l.log, l.metrics, step, "after", after)
	return nil
}

func (l *tuneLoop) saveCheckpoint() error {
	_, err := l.rlRun.save(l.trainer, l.state)
	return err
}

// checkMetrics stops the run when its metrics could not be written, before a checkpoint
// would cover steps whose lines are missing.
func (l *tuneLoop) checkMetrics(step int) error {
	if err := l.metricsOut.Err(); err != nil {
		return fmt.Errorf("step %d: metrics could not be written (%w); the run stops so that none are lost. Free space, then continue from the last checkpoint with --resume %s", step, err, l.runDir)
	}
	return nil
}
