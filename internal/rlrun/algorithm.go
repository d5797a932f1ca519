package rlrun

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// Trainer is what the grpo and ppo commands drive.
type Trainer interface {
	Checkpointer
	TrainStep() (*rl.StepReport, error)
	Policy() nn.LM
	Notes() []string
	Steps() int
	SetComm(*mpi.Comm) error
	SetEnvironment(rl.Environment) error
	SetLossScaler(*train.LossScaler)
}

// Algorithm is what grpo and ppo differ in: GRPO and PPO make it from their configs.
type Algorithm struct {
	// Train are the options every RL trainer shares, inside the algorithm's config.
	Train *rl.TrainConfig
	// Build checks the settings and makes run r's trainer for policy m (l: the checkpoint it
	// came from, nil for a Hugging Face directory); it returns the config as the trainer
	// completed it, for config.json. An error that starts with a setting's JSON name comes
	// back naming its flag (FlagNamed).
	Build func(r *Run, m nn.LM, l *load.Loaded) (Trainer, any, error)
	// Rows is the number of completions a step samples; Reference whether the trainer keeps
	// a reference model (for --dry-run's footprint).
	Rows      func() int
	Reference func() bool
}

// GRPO is grpo's algorithm: its trainer is cfg's, read when the run builds it (a resume
// restores cfg first).
func GRPO(cfg *rl.GRPOTrainerConfig) Algorithm {
	return Algorithm{Train: &cfg.Train,
		Rows:      func() int { return cfg.Train.PromptsPerStep * cfg.GRPO.GroupSize },
		Reference: func() bool { return cfg.UsesReference() },
		Build: func(r *Run, m nn.LM, _ *load.Loaded) (Trainer, any, error) {
			tr, err := rl.NewGRPOTrainer(m, r.Family.Tok, r.Setup.Train, r.Setup.Reward, *cfg)
			if err != nil {
				return nil, nil, err
			}
			return tr, tr.Config, nil
		},
	}
}

// PPO is ppo's algorithm: its trainer is cfg's, read when the run builds it (a resume restores
// cfg first), with the value head of the checkpoint the policy came from when it has one.
func PPO(cfg *rl.PPOTrainerConfig) Algorithm {
	return Algorithm{Train: &cfg.Train,
		Rows:      func() int { return cfg.Train.PromptsPerStep * cfg.SamplesPerPrompt },
		Reference: func() bool { return cfg.UsesReference() },
		Build: func(r *Run, m nn.LM, l *load.Loaded) (Trainer, any, error) {
			tr, err := rl.NewPPOTrainer(m, r.Family.Tok, r.Setup.Train, r.Setup.Reward, *cfg)
			if err != nil {
				return nil, nil, err
			}
			if err := r.restoreValueHead(tr, l); err != nil {
				return nil, nil, err
			}
			if cfg.CriticWarmup >= cfg.Train.Steps {
				r.Log.Warn().Int("critic_warmup", cfg.CriticWarmup).Int("steps", cfg.Train.Steps).Msg("--critic-warmup covers every step: only the value head will train, the policy never moves")
			}
			return tr, tr.Config, nil
		},
	}
}

// restoreValueHead takes the value head of the checkpoint the policy came from, when it has one.
func (r *Run) restoreValueHead(tr *rl.PPOTrainer, l *load.Loaded) error {
	if l == nil || l.State == nil {
		return nil
	}
	ok, err := tr.LoadValueHead(l.State)
	if err != nil {
		return fmt.Errorf("--init %s: %w", l.Path, err)
	}
	if ok {
		r.Log.Info().Msg("value head restored from the initial checkpoint")
	}
	return nil
}

// RL is a grpo or ppo run: its inputs, the model, the trainer spread over the job's ranks when
// launched so, and the steps from the first (or the resumed run's) to the last.
func (r *Run) RL(a Algorithm) (err error) {
	if err := r.start(); err != nil {
		return err
	}
	defer func() { r.Close(err != nil) }()
	c := a.Train
	r.EvalTemp = c.Rollout.Sampling.Temperature
	m, l, err := r.policy(true)
	if err != nil {
		return err
	}
	if err := r.Setup.CheckPrompts(m, r.Family.Tok, r.Supervised); err != nil {
		return err
	}
	c.Rollout.EOS = r.Family.EOS
	r.setEpisodes(c)
	r.spreadSteps(c)
	if r.DryRun {
		return r.printFootprint(a, m)
	}
	if err := checkOptimizer(c.Settings, c.Steps); err != nil {
		return err
	}
	tr, completed, err := a.Build(r, m, l)
	if err != nil {
		return FlagNamed(err, r.Line.Defined)
	}
	tr.SetLossScaler(precision.LossScaler(r.Precision))
	if r.Environment != nil {
		if err := tr.SetEnvironment(*r.Environment); err != nil {
			return FlagNamed(err, r.Line.Defined)
		}
	}
	if err := r.joinTrainer(tr); err != nil {
		return err
	}
	if err := r.restore(tr, c.Steps); err != nil {
		return err
	}
	if err := r.writeConfig(m, completed); err != nil {
		return err
	}
	return r.rlLoop(tr, c.Steps)
}

// setEpisodes gives the trainer's config the episodes of --env (nothing without it) and the
// held-out evaluation the same environment, its turns as long as training's.
func (r *Run) setEpisodes(c *rl.TrainConfig) {
	if r.Environment == nil {
		c.Episodes, c.MaskToolSyntax = nil, false
		return
	}
	limits := r.Env.Limits
	c.Episodes, c.MaskToolSyntax = &limits, r.Env.MaskToolSyntax
	r.Setup.Episodes = &rl.EvalConfig{Env: r.Environment, Episodes: &limits, MaxNewTokens: c.Rollout.MaxNewTokens}
}

// spreadSteps makes an RL run's steps spreadable over ranks under MPI (rl.TrainConfig.Spread);
// a spread run stays spread when resumed, on any number of ranks or in one process.
func (r *Run) spreadSteps(cfg *rl.TrainConfig) {
	if r.Cluster != nil && r.Resumed != nil && !cfg.Spread {
		r.Log.Warn().Msg("the run was started in one process: from here its steps are spread over the ranks, sampled from other streams than it would have been")
	}
	cfg.Spread = cfg.Spread || r.Cluster != nil
}

// joinTrainer spreads a trainer over the job's ranks (nothing in one process).
func (r *Run) joinTrainer(tr interface{ SetComm(*mpi.Comm) error }) error {
	if r.Cluster == nil {
		return nil
	}
	r.Log.Info().Msg(r.Cluster.Describe())
	return tr.SetComm(r.Cluster.Comm())
}

// printFootprint prints the memory the run's configuration takes on its device, for the longest
// prompt it may draw, against what is available.
func (r *Run) printFootprint(a Algorithm, m nn.LM) error {
	cfg, prompt := *a.Train, r.longestPrompt()
	if cfg.Episodes != nil { // at its longest an episode fills its context: one long completion
		prompt, cfg.Rollout.MaxNewTokens = 1, min(cfg.Episodes.MaxEpisodeTokens, m.MaxSeqLen())-1
	}
	fp, err := rl.EstimateFootprint(m, cfg, a.Rows(), prompt, a.Reference())
	if err != nil {
		return err
	}
	line := fmt.Sprintf("memory on %s: %v", r.Be.Name(), fp)
	if budget, source, known := tensor.Budget(r.Be); known {
		line += fmt.Sprintf(" of %s available (%s)", tensor.HumanBytes(int64(budget)), source)
	}
	fmt.Fprintln(r.Stdout, line)
	return nil
}

// longestPrompt is the most tokens a prompt of the run has: a dataset's prompts, the held-out
// ones, and for the built-in tasks a sample of the training stream (a dry run trains nothing).
func (r *Run) longestPrompt() int {
	n := 1
	enc := func(text string) { n = max(n, len(r.Family.Tok.Encode(text))) }
	for _, p := range r.Setup.Prompts {
		enc(p.Text)
	}
	for _, p := range r.Setup.HeldOut {
		enc(p.Text)
	}
	if r.Setup.Mix != nil {
		for range 256 {
			p, err := r.Setup.Train.Next()
			if err != nil {
				break
			}
			enc(p.Text)
		}
	}
	return n
}

// rlLoop evaluates, trains for steps, evaluates again, saves and prints the summary.
func (r *Run) rlLoop(tr Trainer, steps int) error {
	m := tr.Policy()
	for _, n := range tr.Notes() {
		r.Log.Warn().Msg(n)
	}
	r.Log.Info().Str("model", DescribePolicy(m)).Str("prompts", r.promptSource()).Str("run_dir", r.RunDir).Msg(r.Command)
	l, err := r.tune(m, tr, steps, rl.NewSummary(), func(l *TuneLoop) runloop.Trainer { return &rlSteps{l, tr} })
	if err != nil || !l.finishedAll() {
		return err
	}
	var table bytes.Buffer
	l.State.Summary.Table(&table)
	if r.Cluster.Main() {
		if err := atomicfile.WriteFile(filepath.Join(r.RunDir, rundir.Summary), table.Bytes(), 0o644); err != nil {
			return err
		}
	}
	r.Stdout.Write(table.Bytes())
	l.finish()
	return nil
}

// rlSteps are the steps of a grpo or ppo run: each goes to the run's metrics, completions log,
// summary and progress bar, and a trainer's Stop action ends the run.
type rlSteps struct {
	*TuneLoop
	tr Trainer
}

func (s *rlSteps) Steps() int { return s.tr.Steps() }
func (s *rlSteps) Done() bool { return s.tr.Steps() >= s.Last }

func (s *rlSteps) Step() (int, map[string]float64, bool, error) {
	rep, err := s.tr.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	if len(rep.Warnings) > 0 {
		s.Bar.Clear()
	}
	rl.WriteMetrics(s.Metrics, s.Log, s.Command, rep)
	if err := s.completions.Write(rep.Step, rep.Completions); err != nil {
		return 0, nil, false, err
	}
	s.State.Summary.Add(rep)
	s.Bar.Update(rep.Step, fmt.Sprintf("reward %.3f | kl %.4f", rep.Metrics["reward_mean"], rep.Metrics["kl_mean"]))
	if rep.Action == rl.Stop {
		s.Bar.Clear()
		s.Log.Error().Int("step", rep.Step).Msg("training stopped: " + rep.Reason)
		s.State.Stopped = rep.Reason
		return rep.Step, nil, true, nil
	}
	return rep.Step, nil, false, s.checkMetrics(rep.Step)
}

// promptSource names where a run's prompts come from, for the log: the dataset file, the
// built-in tasks, or an environment's own resets.
func (r *Run) promptSource() string {
	if r.Env.Active() && r.Tasks.Data.Path == "" {
		return "environment " + r.Env.Label()
	}
	return r.Tasks.Source()
}
