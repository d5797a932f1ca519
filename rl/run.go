package rl

import (
	"context"

	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
)

// RunOptions say how Run drives a trainer: a run directory for the checkpoint and one JSON
// line of metrics per step, how often to save, whether to resume, a step to pause at,
// progress lines, a per-step callback, and evaluation every few steps and at the end.
type RunOptions = runloop.Options

// Interrupted is Run's error when the context was cancelled: the checkpoint was saved at its
// Step unless its SaveErr says otherwise.
type Interrupted = runloop.Interrupted

// resumable is what GRPO and PPO trainers share for Run.
type resumable interface {
	TrainStep() (*StepReport, error)
	Steps() int
	Save(path string) error
	Restore(st *checkpoint.State, path string) error
}

var (
	_ runloop.Resumable = rlRunner{}
	_ runloop.Resumable = sftRunner{}
)

// rlRunner adapts a GRPO or PPO trainer to the run loop.
type rlRunner struct {
	t    resumable
	done func() bool
}

func (r rlRunner) Step() (int, map[string]float64, bool, error) {
	rep, err := r.t.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	named := make(map[string]float64, len(rep.Metrics))
	for k, v := range rep.Metrics {
		named[MetricName(k)] = v
	}
	return rep.Step, named, rep.Action == Stop, nil
}

func (r rlRunner) Steps() int             { return r.t.Steps() }
func (r rlRunner) Done() bool             { return r.done() }
func (r rlRunner) Save(path string) error { return r.t.Save(path) }

func (r rlRunner) Restore(path string) (int, error) {
	st, err := checkpoint.Load(path)
	if err != nil {
		return 0, err
	}
	return st.Step, r.t.Restore(st, path)
}

// Run trains for the remaining steps of Config.Train.Steps (see RunOptions): with o.Dir, the
// checkpoint is saved every o.SaveEvery steps, at the end, at o.StopAt and when ctx is
// cancelled (Ctrl-C through signal.NotifyContext; the error is then an *Interrupted), and
// o.Resume continues it bit for bit. A KL hard cap with kl_cap_action stop ends training early
// without an error (Stopped says why).
func (t *GRPOTrainer) Run(ctx context.Context, o RunOptions) error {
	done := func() bool { return t.step >= t.Config.Train.Steps || t.stopped != "" }
	return runloop.Run(ctx, rlRunner{t, done}, o)
}

// Run is GRPOTrainer.Run for PPO.
func (t *PPOTrainer) Run(ctx context.Context, o RunOptions) error {
	return runloop.Run(ctx, rlRunner{t, func() bool { return t.step >= t.Config.Train.Steps }}, o)
}

// sftRunner adapts the supervised trainer to the run loop.
type sftRunner struct{ t *SFTTrainer }

func (r sftRunner) Step() (int, map[string]float64, bool, error) {
	s, err := r.t.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	return s.Step, s.Metrics(), false, nil
}

func (r sftRunner) Steps() int             { return r.t.Step }
func (r sftRunner) Done() bool             { return r.t.Step >= r.t.Config.Steps }
func (r sftRunner) Save(path string) error { return r.t.Save(path) }

func (r sftRunner) Restore(path string) (int, error) {
	st, err := checkpoint.Load(path)
	if err != nil {
		return 0, err
	}
	return st.Step, r.t.Restore(st, path)
}

// Run trains for the remaining steps of Config.Steps, as GRPOTrainer.Run does.
func (t *SFTTrainer) Run(ctx context.Context, o RunOptions) error {
	return runloop.Run(ctx, sftRunner{t}, o)
}
