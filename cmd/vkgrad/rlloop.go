package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl"
)

// rlTrainer is what the grpo and ppo commands drive.
type rlTrainer interface {
	checkpointer
	TrainStep() (*rl.StepReport, error)
	Policy() rl.Policy
	Notes() []string
	Steps() int
	SetComm(*mpi.Comm) error
	SetEnvironment(rl.Environment) error
	SetLossScaler(*train.LossScaler)
}

// loop evaluates, trains for steps (saving every --save-every steps, at --stop-at and on an
// interrupt), evaluates again, saves and prints the summary. A resumed run takes the accuracy
// before training and the summary so far from its checkpoint.
func (r *rlRun) loop(kind string, tr rlTrainer, steps int) error {
	m := tr.Policy()
	for _, n := range tr.Notes() {
		r.log.Warn().Msg(n)
	}
	r.log.Info().Str("model", rlrun.DescribePolicy(m)).Str("prompts", r.promptSource()).Str("run_dir", r.runDir).Msg(kind)
	ctx, stop := interruptContext()
	defer stop()
	start := time.Now()
	l, err := r.newTuneLoop(kind, m, tr, steps, rl.NewSummary())
	if err != nil {
		return err
	}
	if err := l.run(ctx, &rlSteps{l, tr}); err != nil || !l.finished {
		return err
	}
	var table bytes.Buffer
	l.state.Summary.Table(&table)
	if r.cluster.Main() {
		if err := os.WriteFile(filepath.Join(r.runDir, "summary.txt"), table.Bytes(), 0o644); err != nil {
			return err
		}
	}
	stdout.Write(table.Bytes())
	r.finish(l.state.Before, l.after, time.Since(start), l.checkpointPath())
	return nil
}

// rlSteps are the steps of a grpo or ppo run: each goes to the run's metrics, completions log,
// summary and progress bar, and a trainer's Stop action ends the run.
type rlSteps struct {
	*tuneLoop
	tr rlTrainer
}

func (s *rlSteps) Steps() int { return s.tr.Steps() }
func (s *rlSteps) Done() bool { return s.tr.Steps() >= s.last }

func (s *rlSteps) Step() (int, map[string]float64, bool, error) {
	rep, err := s.tr.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	if len(rep.Warnings) > 0 {
		s.bar.Clear()
	}
	rl.WriteMetrics(s.metrics, s.log, s.command, rep)
	if err := s.completions.Write(rep.Step, rep.Completions); err != nil {
		return 0, nil, false, err
	}
	s.state.Summary.Add(rep)
	s.bar.Update(rep.Step, fmt.Sprintf("reward %.3f | kl %.4f", rep.Metrics["reward_mean"], rep.Metrics["kl_mean"]))
	if rep.Action == rl.Stop {
		s.bar.Clear()
		s.log.Error().Int("step", rep.Step).Msg("training stopped: " + rep.Reason)
		s.state.Stopped = rep.Reason
		return rep.Step, nil, true, nil
	}
	return rep.Step, nil, false, s.checkMetrics(rep.Step)
}

// promptSource names where a run's prompts come from, for the log: the dataset file, the
// built-in tasks, or an environment's own resets.
func (r *rlRun) promptSource() string {
	if r.env.Active() && r.tasks.Data.Path == "" {
		return "environment " + r.env.Label()
	}
	return r.tasks.Source()
}
