package rlrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/plot"
	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/rl"
)

// TuneLoop is an sft, grpo or ppo run from its first step to its last: the hooks it gives the
// run loop, and what they record for the end of the run.
type TuneLoop struct {
	*Run
	Policy  nn.LM
	trainer Checkpointer
	Last    int // --steps
	State   *RunState
	Bar     *progress.Bar
	// after is the held-out accuracy after the last step; finished says the run got there (or
	// its trainer stopped it) rather than pausing at --stop-at.
	after    *rl.EvalResult
	finished bool
	start    time.Time
}

// tune evaluates m, trains it with the steps newSteps makes of the loop until the last (saving
// every --save-every steps, at --stop-at and on an interrupt), and evaluates it again. A
// resumed run takes the accuracy before training, and the summary so far (summary, when not
// nil, accumulates the steps of grpo and ppo), from its checkpoint. finishedAll says whether the
// run got to its end, for finish to report.
func (r *Run) tune(m nn.LM, tr Checkpointer, last int, summary *rl.Summary, newSteps func(*TuneLoop) runloop.Trainer) (*TuneLoop, error) {
	ctx, stop := runloop.InterruptContext()
	defer stop()
	start := time.Now()
	l, err := r.newTuneLoop(m, tr, last, summary)
	if err != nil {
		return nil, err
	}
	l.start = start
	steps := newSteps(l)
	err = runloop.Run(ctx, steps, runloop.Options{
		SaveEvery: r.Opts.SaveEvery, StopAt: r.Opts.StopAt, EvalEvery: r.Opts.EvalEvery, Eval: l.evalDuring,
		Finish: l.evalAfter, Save: l.saveCheckpoint, AnyCancelled: r.Cluster.AnyStop,
		OnStep: r.OnStep(ctx),
	})
	return l, l.ended(steps, err)
}

// newTuneLoop starts the loop's state: a resumed run's, else the held-out accuracy before
// training.
func (r *Run) newTuneLoop(m nn.LM, tr Checkpointer, last int, summary *rl.Summary) (*TuneLoop, error) {
	rs := &RunState{Summary: summary}
	if r.Resumed != nil {
		rs.Before = r.Resumed.Before
		if r.Resumed.Summary != nil {
			rs.Summary = r.Resumed.Summary
		}
	} else {
		var err error
		if rs.Before, err = r.evaluateBefore(m); err != nil {
			return nil, err
		}
		logEval(r.Log, r.Metrics, 0, "before", rs.Before)
	}
	out := io.Writer(os.Stderr)
	if !r.Cluster.Main() { // rank 0 shows the job's progress
		out = io.Discard
	}
	return &TuneLoop{Run: r, Policy: m, trainer: tr, Last: last, State: rs, Bar: progress.New(out, last)}, nil
}

// ended tells a paused run how to continue (on Stdout) and an interrupted one (as the
// command's error).
func (l *TuneLoop) ended(steps runloop.Trainer, err error) error {
	l.Bar.Clear()
	var in *runloop.Interrupted
	switch {
	case errors.As(err, &in) && in.SaveErr != nil:
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted, and saving failed: %w", in.SaveErr)}
	case errors.As(err, &in):
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted at step %d of %d; saved %s; continue with: vkgrad %s --resume %s", in.Step, l.Last, l.CheckpointPath(), l.Command, l.RunDir)}
	case err == nil && !l.finished:
		fmt.Fprintf(l.Stdout, "stopped at step %d of %d; saved %s; continue with: vkgrad %s --resume %s\n", steps.Steps(), l.Last, l.CheckpointPath(), l.Command, l.RunDir)
	}
	return err
}

// finishedAll says the run got to its last step (or its trainer stopped it) rather than pausing
// at --stop-at.
func (l *TuneLoop) finishedAll() bool { return l.finished }

// evalDuring measures the held-out accuracy every --eval-every steps.
func (l *TuneLoop) evalDuring(step int) error {
	e, err := l.Setup.Evaluate(l.Policy, &l.Tasks, l.Family, l.EvalTemp, l.Cluster.Comm())
	if err != nil {
		return err
	}
	l.Bar.Clear()
	logEval(l.Log, l.Metrics, step, "during", e)
	return nil
}

// evalAfter measures the held-out accuracy after the last step, before the final checkpoint.
func (l *TuneLoop) evalAfter(step int) error {
	l.Bar.Clear()
	after, err := l.Setup.Evaluate(l.Policy, &l.Tasks, l.Family, l.EvalTemp, l.Cluster.Comm())
	if err != nil {
		return err
	}
	l.after, l.finished = after, true
	logEval(l.Log, l.Metrics, step, "after", after)
	return nil
}

func (l *TuneLoop) saveCheckpoint() error {
	_, err := l.save(l.trainer, l.State)
	return err
}

// checkMetrics stops the run when its metrics could not be written, before a checkpoint
// would cover steps whose lines are missing.
func (l *TuneLoop) checkMetrics(step int) error {
	if err := l.metricsOut.Err(); err != nil {
		return fmt.Errorf("step %d: metrics could not be written (%w); the run stops so that none are lost. Free space, then continue from the last checkpoint with --resume %s", step, err, l.RunDir)
	}
	return nil
}

// finish prints the accuracies and where the results are.
func (l *TuneLoop) finish() {
	before, after, wall := l.State.Before, l.after, time.Since(l.start)
	if before != nil && after != nil {
		fmt.Fprintf(l.Stdout, "held-out accuracy (greedy): %s -> %s (%+.1f points) in %s\n", evalLine(before), evalLine(after),
			100*(after.Accuracy-before.Accuracy), wall.Round(time.Second))
		if l.Tasks.EvalSamples > 0 {
			fmt.Fprintf(l.Stdout, "held-out accuracy (%d samples per problem at temperature %g): %.1f%% -> %.1f%% (%+.1f points)\n",
				l.Tasks.EvalSamples, l.EvalTemp, 100*before.SampledAccuracy, 100*after.SampledAccuracy, 100*(after.SampledAccuracy-before.SampledAccuracy))
		}
	}
	fmt.Fprintf(l.Stdout, "checkpoint: %s\nmetrics:    %s\n", l.CheckpointPath(), filepath.Join(l.RunDir, rundir.Metrics))
	if l.Cluster.Main() {
		fmt.Fprintf(l.Stdout, "curves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", plot.DrawRun(l.RunDir), l.RunDir, l.RunDir)
	}
}

func evalLine(r *rl.EvalResult) string {
	if r == nil {
		return "n/a"
	}
	s := fmt.Sprintf("%.1f%% ± %.1f (%d problems, mean reward %.3f)", 100*r.Accuracy, 100*r.AccuracySE, r.N, r.MeanReward)
	if len(r.ByTask) > 1 {
		var parts []string
		for name, e := range r.ByTask {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", name, 100*e.Accuracy))
		}
		slices.Sort(parts)
		s += " [" + strings.Join(parts, ", ") + "]"
	}
	return s
}

func logEval(log, metrics zerolog.Logger, step int, when string, r *rl.EvalResult) {
	if r == nil {
		return
	}
	ev := metrics.Log().Str("kind", "eval").Int("step", step).Str("when", when).Float64("accuracy", r.Accuracy).Float64("accuracy_se", r.AccuracySE).
		Float64("sampled_accuracy", r.SampledAccuracy).Float64("mean_reward", r.MeanReward).Int("n", r.N)
	for name, e := range r.ByTask {
		ev = ev.Float64("accuracy/"+name, e.Accuracy).Float64("sampled_accuracy/"+name, e.SampledAccuracy)
	}
	ev.Msg("")
	log.Info().Int("step", step).Float64("accuracy", r.Accuracy).Float64("accuracy_se", logfmt.Rounded(r.AccuracySE)).Float64("sampled_accuracy", r.SampledAccuracy).
		Float64("mean_reward", r.MeanReward).Msg("held-out accuracy " + when)
}
