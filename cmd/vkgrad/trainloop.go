package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
)

// loop validates, trains to --steps through the run loop (validating every --val-every steps,
// saving every --save-every steps, at --stop-at and on an interrupt), validates again, saves
// and prints the summary (rank 0).
func (f *trainFlags) loop(tr *train.Trainer, log zerolog.Logger, metrics zerolog.Logger) error {
	ctx, stop := interruptContext()
	defer stop()
	out := io.Writer(os.Stderr)
	if !f.cluster.main() {
		out = io.Discard
	}
	s := &trainSteps{trainFlags: f, tr: tr, log: log, metrics: metrics, start: time.Now()}
	firstVal, err := s.validate()
	if err != nil {
		return err
	}
	log.Info().Int("step", tr.Step).Float32("val_loss", firstVal).Msg("validation before training")
	s.bar = progress.New(out, f.cfg.Steps)
	err = runloop.Run(ctx, s, runloop.Options{
		SaveEvery: f.loopOpts.SaveEvery, StopAt: f.stopAt, EvalEvery: f.loopOpts.ValEvery, Eval: s.validateDuring,
		Finish: s.finish, Save: s.save, AnyCancelled: f.cluster.anyStop,
		OnStep: testStepHook(ctx),
	})
	s.bar.Clear()
	var in *runloop.Interrupted
	switch {
	case errors.As(err, &in) && in.SaveErr != nil:
		return agreedStop{fmt.Errorf("interrupted, and saving failed: %w", in.SaveErr)}
	case errors.As(err, &in):
		return agreedStop{fmt.Errorf("interrupted at step %d; saved %s; continue with: vkgrad train --resume %s", in.Step, s.checkpointPath(), f.runDir)}
	case err != nil:
		return err
	case !f.cluster.main():
		return nil
	case !s.finished:
		fmt.Fprintf(stdout, "stopped at step %d of %d; saved %s; continue with: vkgrad train --resume %s\n", tr.Step, f.cfg.Steps, s.checkpointPath(), f.runDir)
		return nil
	}
	return s.report(firstVal)
}

// trainSteps are the steps of a train run: each goes to the run's metrics and progress bar; a
// non-finite step that was skipped is logged.
type trainSteps struct {
	*trainFlags
	tr           *train.Trainer
	log, metrics zerolog.Logger
	bar          *progress.Bar
	start        time.Time
	tokens       int // trained on so far by this invocation
	// finalVal is the validation loss after the last step; finished says the run got there
	// rather than pausing at --stop-at.
	finalVal float32
	finished bool
}

func (s *trainSteps) Steps() int { return s.tr.Step }
func (s *trainSteps) Done() bool { return s.tr.Step >= s.cfg.Steps }

// skippedStep are the run-loop metrics of a step the trainer skipped.
var skippedStep = map[string]float64{runloop.Skipped: 1}

func (s *trainSteps) Step() (int, map[string]float64, bool, error) {
	st, err := s.tr.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	if st.Skipped {
		s.bar.Clear()
		s.log.Warn().Int("step", st.Step).Str("why", st.Reason).Int("skipped_so_far", s.tr.Skipped).Msg("skipped a non-finite step; the weights were not updated")
		ev := s.metrics.Log().Str("kind", "train").Int("step", st.Step).Bool("skipped", true).Str("reason", st.Reason)
		if st.LossScale > 0 {
			ev = ev.Float32("loss_scale", st.LossScale)
		}
		ev.Msg("")
		return st.Step, skippedStep, false, nil
	}
	s.tokens += st.Tokens
	tps := float64(s.tokens) / time.Since(s.start).Seconds()
	stepLine(s.metrics.Log().Str("kind", "train"), st, s.cluster != nil).Float64("tok_per_s", tps).Msg("")
	s.bar.Update(st.Step, fmt.Sprintf("loss %.3f | %.0f tok/s", st.Loss, tps))
	if err := s.metricsOut.Err(); err != nil { // nil on ranks other than 0
		return 0, nil, false, fmt.Errorf("step %d: metrics could not be written (%w); the run stops so that none are lost. The last checkpoint is intact: free space, then vkgrad train --resume %s", st.Step, err, s.runDir)
	}
	return st.Step, nil, false, nil
}

// validate measures the validation loss on rank 0 (NaN elsewhere, and without a split).
func (s *trainSteps) validate() (float32, error) {
	if s.tr.Val == nil || !s.cluster.main() {
		return float32(math.NaN()), nil
	}
	v, err := s.tr.Evaluate()
	if err != nil {
		return 0, err
	}
	s.metrics.Log().Str("kind", "val").Int("step", s.tr.Step).Float32("val_loss", v).Msg("")
	return v, nil
}

// validateDuring validates every --val-every steps.
func (s *trainSteps) validateDuring(step int) error {
	v, err := s.validate()
	if err != nil {
		return err
	}
	s.bar.Clear()
	s.log.Info().Int("step", step).Float32("val_loss", v).Msg("validation")
	return nil
}

// finish validates after the last step, before the final checkpoint.
func (s *trainSteps) finish(int) error {
	v, err := s.validate()
	s.finalVal, s.finished = v, err == nil
	return err
}

func (s *trainSteps) checkpointPath() string { return filepath.Join(s.runDir, rundir.Checkpoint) }

// save writes the checkpoint from rank 0 after every rank has confirmed its parameters equal
// the others', and makes the metrics as durable as it.
func (s *trainSteps) save() error {
	if err := s.tr.CheckReplicas(); err != nil {
		return err
	}
	if !s.cluster.main() {
		return nil
	}
	if err := s.tr.Save(s.checkpointPath()); err != nil {
		return err
	}
	s.held.Saved()
	return s.metricsOut.Sync()
}

// report logs and prints the validation loss before and after, a sample, and where the run's
// files are.
func (s *trainSteps) report(firstVal float32) error {
	wall := time.Since(s.start)
	finalVal := s.finalVal
	s.log.Info().Float32("val_loss_start", firstVal).Float32("val_loss_end", finalVal).
		Float32("drop", firstVal-finalVal).Str("wall", wall.Round(time.Second).String()).
		Float64("tok_per_s", rounded(float64(s.tokens)/wall.Seconds())).Msg("validation loss")
	if s.tr.Val == nil {
		fmt.Fprintf(stdout, "trained %d steps in %s (no validation split: --val-fraction 0)\n", s.tr.Step, wall.Round(time.Second))
	} else {
		fmt.Fprintf(stdout, "validation loss %.4f -> %.4f (fell by %.4f, %.1f%%) in %s\n", firstVal, finalVal, firstVal-finalVal,
			100*(firstVal-finalVal)/firstVal, wall.Round(time.Second))
	}
	if g, ok := s.tr.Model.(*nn.GPT2LM); ok && s.loopOpts.SampleTokens > 0 {
		res, err := generateText(g.Model, s.runDir, s.loopOpts.SamplePrompt, s.loopOpts.SampleTokens, 1, sample.Options{Temperature: 0.8, TopK: 40, TopP: 0.95}, s.cfg.Seed)
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		fmt.Fprintf(stdout, "--- sample ---\n%s\n--------------\n", res.texts[0])
	}
	fmt.Fprintf(stdout, "checkpoint: %s\nmetrics:    %s\ncurves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", s.checkpointPath(), filepath.Join(s.runDir, rundir.Metrics), drawRunCurves(s.runDir), s.runDir, s.runDir)
	return nil
}
