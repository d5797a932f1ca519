package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
)

// loop trains to --steps through trainrun.Loop (validating every --val-every steps, saving
// every --save-every steps, at --stop-at and on an interrupt), then says how a paused or
// interrupted run continues, or prints the summary (rank 0).
func (f *trainFlags) loop(tr *train.Trainer, log zerolog.Logger, metrics zerolog.Logger) error {
	ctx, stop := interruptContext()
	defer stop()
	out := io.Writer(os.Stderr)
	if !f.cluster.Main() {
		out = io.Discard
	}
	l := &trainrun.Loop{Trainer: tr, Last: f.cfg.Steps, RunDir: f.runDir, Main: f.cluster.Main(), Distributed: f.cluster != nil,
		Log: log, Metrics: metrics, MetricsOut: f.metricsOut, Held: f.held,
		ValEvery: f.loopOpts.ValEvery, SaveEvery: f.loopOpts.SaveEvery, StopAt: f.stopAt, Progress: out,
		AnyCancelled: f.cluster.AnyStop, OnStep: testStepHook(ctx)}
	res, err := l.Run(ctx)
	var in *runloop.Interrupted
	switch {
	case errors.As(err, &in) && in.SaveErr != nil:
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted, and saving failed: %w", in.SaveErr)}
	case errors.As(err, &in):
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted at step %d; saved %s; continue with: vkgrad train --resume %s", in.Step, l.CheckpointPath(), f.runDir)}
	case err != nil:
		return err
	case !f.cluster.Main():
		return nil
	case !res.Finished:
		fmt.Fprintf(stdout, "stopped at step %d of %d; saved %s; continue with: vkgrad train --resume %s\n", tr.Step, f.cfg.Steps, l.CheckpointPath(), f.runDir)
		return nil
	}
	return f.report(tr, res, log)
}

// report logs and prints the validation loss before and after, a sample, and where the run's
// files are.
func (f *trainFlags) report(tr *train.Trainer, res trainrun.Result, log zerolog.Logger) error {
	wall := time.Since(res.Start)
	firstVal, finalVal := res.FirstVal, res.FinalVal
	log.Info().Float32("val_loss_start", firstVal).Float32("val_loss_end", finalVal).
		Float32("drop", firstVal-finalVal).Str("wall", wall.Round(time.Second).String()).
		Float64("tok_per_s", logfmt.Rounded(float64(res.Tokens)/wall.Seconds())).Msg("validation loss")
	if tr.Val == nil {
		fmt.Fprintf(stdout, "trained %d steps in %s (no validation split: --val-fraction 0)\n", tr.Step, wall.Round(time.Second))
	} else {
		fmt.Fprintf(stdout, "validation loss %.4f -> %.4f (fell by %.4f, %.1f%%) in %s\n", firstVal, finalVal, firstVal-finalVal,
			100*(firstVal-finalVal)/firstVal, wall.Round(time.Second))
	}
	if g, ok := tr.Model.(*nn.GPT2LM); ok && f.loopOpts.SampleTokens > 0 {
		gen, err := generateText(g.Model, f.runDir, f.loopOpts.SamplePrompt, f.loopOpts.SampleTokens, 1, sample.Options{Temperature: 0.8, TopK: 40, TopP: 0.95}, f.cfg.Seed)
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		fmt.Fprintf(stdout, "--- sample ---\n%s\n--------------\n", gen.texts[0])
	}
	fmt.Fprintf(stdout, "checkpoint: %s\nmetrics:    %s\ncurves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", filepath.Join(f.runDir, rundir.Checkpoint), filepath.Join(f.runDir, rundir.Metrics), drawRunCurves(f.runDir), f.runDir, f.runDir)
	return nil
}
