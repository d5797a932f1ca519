package train

import (
	"context"

	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
)

// RunOptions say how Run drives the trainer: a run directory for the checkpoint and one JSON
// line of metrics per step, how often to save, whether to resume, a step to pause at,
// progress lines, a per-step callback, and evaluation every few steps and at the end (where
// a caller measures validation loss with Evaluate, say).
type RunOptions = runloop.Options

// Interrupted is Run's error when the context was cancelled: the checkpoint was saved at its
// Step unless its SaveErr says otherwise.
type Interrupted = runloop.Interrupted

var _ runloop.Resumable = runner{}

// runner adapts a Trainer to the run loop.
type runner struct{ t *Trainer }

func (r runner) Step() (int, map[string]float64, bool, error) {
	s, err := r.t.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	m := map[string]float64{"loss": float64(s.Loss), "learning_rate": float64(s.LR), "grad_norm": float64(s.GradNorm),
		"tokens": float64(s.Tokens), "step_seconds": s.Seconds}
	if s.Skipped {
		m[runloop.Skipped] = 1
	}
	return s.Step, m, false, nil
}

func (r runner) Steps() int             { return r.t.Step }
func (r runner) Done() bool             { return r.t.Step >= r.t.Config.Steps }
func (r runner) Save(path string) error { return r.t.Save(path) }

func (r runner) Restore(path string) (int, error) {
	st, err := checkpoint.Load(path)
	if err != nil {
		return 0, err
	}
	return st.Step, r.t.Restore(st, path)
}

// Run trains for the remaining steps of Config.Steps: with o.Dir, the checkpoint is saved
// every o.SaveEvery steps, at the end, at o.StopAt and when ctx is cancelled (Ctrl-C through
// signal.NotifyContext; the error is then an *Interrupted), and o.Resume continues it bit for
// bit.
func (t *Trainer) Run(ctx context.Context, o RunOptions) error {
	return runloop.Run(ctx, runner{t}, o)
}
