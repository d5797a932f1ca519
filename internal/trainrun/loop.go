package trainrun

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn/train"
)

// Loop is a train run from its trainer's current step to its last, driven by the run loop:
// validation before, every ValEvery steps and after the last; a checkpoint every SaveEvery
// steps, at StopAt, on cancellation and at the end. Rank 0 (Main) validates, saves and writes
// the metrics; every rank trains.
type Loop struct {
	Trainer *train.Trainer
	Last    int    // the step the run ends at
	RunDir  string // holds the checkpoint; named by the advice when metrics cannot be written
	// Main says this process is rank 0 (or alone); Distributed, that the run spans processes,
	// whose step lines then say what each step sent.
	Main, Distributed bool
	Log, Metrics      zerolog.Logger
	MetricsOut        *rundir.MetricsWriter // the metrics' file; nil on ranks other than 0
	Held              *rundir.Held          // the claimed run directory, told of each save
	// ValEvery, SaveEvery and StopAt are the run loop's cadences (0: none).
	ValEvery, SaveEvery, StopAt int
	Progress                    io.Writer // the progress bar's terminal; io.Discard for none
	// AnyCancelled and OnStep are runloop.Options' hooks.
	AnyCancelled func(cancelled bool) (bool, error)
	OnStep       func(step int, metrics map[string]float64) error
}

// Result is what a run's steps came to.
type Result struct {
	Start time.Time // when the run began, before the first validation
	// FirstVal and FinalVal are the validation losses before the first step and after the
	// last (NaN without a validation split, and on ranks other than 0).
	FirstVal, FinalVal float32
	// Finished says the run reached its last step rather than pausing at StopAt.
	Finished bool
	Tokens   int // trained on by this invocation
}

// CheckpointPath is where the run's checkpoint is saved.
func (l *Loop) CheckpointPath() string { return filepath.Join(l.RunDir, rundir.Checkpoint) }

// Run validates, trains to the last step through runloop.Run (whose *runloop.Interrupted
// error it returns unchanged, for the caller to explain) and validates again before the final
// checkpoint.
func (l *Loop) Run(ctx context.Context) (Result, error) {
	s := &steps{Loop: l, start: time.Now()}
	firstVal, err := s.validate()
	if err != nil {
		return Result{}, err
	}
	l.Log.Info().Int("step", l.Trainer.Step).Float32("val_loss", firstVal).Msg("validation before training")
	s.bar = progress.New(l.Progress, l.Last)
	err = runloop.Run(ctx, s, runloop.Options{
		SaveEvery: l.SaveEvery, StopAt: l.StopAt, EvalEvery: l.ValEvery, Eval: s.validateDuring,
		Finish: s.finish, Save: s.save, AnyCancelled: l.AnyCancelled, OnStep: l.OnStep,
	})
	s.bar.Clear()
	return Result{Start: s.start, FirstVal: firstVal, FinalVal: s.finalVal, Finished: s.finished, Tokens: s.tokens}, err
}

// steps are the run loop's view of a Loop: each step goes to the run's metrics and progress
// bar; a non-finite step that was skipped is logged.
type steps struct {
	*Loop
	bar    *progress.Bar
	start  time.Time
	tokens int // trained on so far by this invocation
	// finalVal is the validation loss after the last step; finished says the run got there
	// rather than pausing at StopAt.
	finalVal float32
	finished bool
}

func (s *steps) Steps() int { return s.Trainer.Step }
func (s *steps) Done() bool { return s.Trainer.Step >= s.Last }

// skippedStep are the run-loop metrics of a step the trainer skipped.
var skippedStep = map[string]float64{runloop.Skipped: 1}

func (s *steps) Step() (int, map[string]float64, bool, error) {
	st, err := s.Trainer.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	if st.Skipped {
		s.bar.Clear()
		s.Log.Warn().Int("step", st.Step).Str("why", st.Reason).Int("skipped_so_far", s.Trainer.Skipped).Msg("skipped a non-finite step; the weights were not updated")
		ev := s.Metrics.Log().Str("kind", "train").Int("step", st.Step).Bool("skipped", true).Str("reason", st.Reason)
		if st.LossScale > 0 {
			ev = ev.Float32("loss_scale", st.LossScale)
		}
		ev.Msg("")
		return st.Step, skippedStep, false, nil
	}
	s.tokens += st.Tokens
	tps := float64(s.tokens) / time.Since(s.start).Seconds()
	StepLine(s.Metrics.Log().Str("kind", "train"), st, s.Distributed).Float64("tok_per_s", tps).Msg("")
	s.bar.Update(st.Step, fmt.Sprintf("loss %.3f | %.0f tok/s", st.Loss, tps))
	if err := s.MetricsOut.Err(); err != nil { // nil on ranks other than 0
		return 0, nil, false, fmt.Errorf("step %d: metrics could not be written (%w); the run stops so that none are lost. The last checkpoint is intact: free space, then vkgrad train --resume %s", st.Step, err, s.RunDir)
	}
	return st.Step, nil, false, nil
}

// validate measures the validation loss on rank 0 (NaN elsewhere, and without a split).
func (s *steps) validate() (float32, error) {
	if s.Trainer.Val == nil || !s.Main {
		return float32(math.NaN()), nil
	}
	v, err := s.Trainer.Evaluate()
	if err != nil {
		return 0, err
	}
	s.Metrics.Log().Str("kind", "val").Int("step", s.Trainer.Step).Float32("val_loss", v).Msg("")
	return v, nil
}

// validateDuring validates every ValEvery steps.
func (s *steps) validateDuring(step int) error {
	v, err := s.validate()
	if err != nil {
		return err
	}
	s.bar.Clear()
	s.Log.Info().Int("step", step).Float32("val_loss", v).Msg("validation")
	return nil
}

// finish validates after the last step, before the final checkpoint.
func (s *steps) finish(int) error {
	v, err := s.validate()
	s.finalVal, s.finished = v, err == nil
	return err
}

// save writes the checkpoint from rank 0 after every rank has confirmed its parameters equal
// the others', and makes the metrics as durable as it.
func (s *steps) save() error {
	if err := s.Trainer.CheckReplicas(); err != nil {
		return err
	}
	if !s.Main {
		return nil
	}
	if err := s.Trainer.Save(s.CheckpointPath()); err != nil {
		return err
	}
	s.Held.Saved()
	return s.MetricsOut.Sync()
}

// StepLine adds a step's numbers to its metrics line under the names train and sft lines share
// (float32 values written as float32), and, when the run spans ranks, what the step sent and
// its time in MPI.
func StepLine(ev *zerolog.Event, st train.StepStats, ranks bool) *zerolog.Event {
	ev = ev.Int("step", st.Step).Float32("loss", st.Loss).Float32("learning_rate", st.LR).Float32("grad_norm", st.GradNorm).
		Int("tokens", st.Tokens).Float64("step_seconds", st.Seconds)
	if ranks {
		ev = ev.Int64("comm_bytes", st.CommBytes).Float64("comm_seconds", st.CommSeconds)
	}
	if st.LossScale > 0 {
		ev = ev.Float32("loss_scale", st.LossScale)
	}
	return ev
}
