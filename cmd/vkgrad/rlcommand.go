package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// rlAlgorithm is what the grpo and ppo commands differ in; rlCommand is the rest.
type rlAlgorithm struct {
	name, modelHelp string
	config          any                  // the algorithm's whole config, decoded from a resumed run
	train           *rl.TrainConfig      // the options every RL trainer shares, inside config
	addFlags        func(*pflag.FlagSet) // the shared and the algorithm's own flags
	// build makes the trainer for policy m (l: the checkpoint it came from, nil for a Hugging
	// Face directory) and returns the config as the trainer completed it, for config.json.
	build func(r *rlRun, m rl.Policy, l *load.Loaded) (rlTrainer, any, error)
	// rows is the number of completions a step samples; reference whether the trainer keeps
	// a reference model (for --dry-run's footprint).
	rows      func() int
	reference func() bool
}

// rlCommand is `vkgrad <name>`: flags, run directory and resume, the model, the trainer spread
// over MPI ranks when launched so, and the run loop. newAlgorithm makes each run's fresh
// config.
func rlCommand(name, summary string, newAlgorithm func() rlAlgorithm) command {
	return command{name: name, summary: summary, setup: func(fs *pflag.FlagSet) func([]string) error {
		a := newAlgorithm()
		r := &rlRun{tasks: rlrun.DefaultTasks(), env: rlrun.DefaultEnv()}
		r.common = addCommonFlags(fs)
		addTaskFlags(fs, &r.tasks)
		addEnvFlags(fs, &r.env)
		addRunFlags(fs, r, a.modelHelp)
		a.addFlags(fs)
		fs.BoolVar(&r.dryRun, "dry-run", false, "print the memory the run needs (parameters, gradients, AdamW, reference, activations, lm head, rollout decoder) against what is available, and exit")
		return func(args []string) error { return r.runRL(a, fs, args) }
	}}
}

// runRL is one RL command's run.
func (r *rlRun) runRL(a rlAlgorithm, fs *pflag.FlagSet, args []string) (err error) {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", a.name, args)
	}
	spec := resumeSpec{decode: func(raw json.RawMessage) error { return json.Unmarshal(raw, a.config) }, register: a.addFlags, episodes: true}
	if err := r.start(fs, a.name, spec); err != nil {
		return err
	}
	defer func() { r.closeMetrics(err != nil) }()
	c := a.train
	r.evalTemp = c.Rollout.Sampling.Temperature
	m, l, err := r.model(true)
	if err != nil {
		return err
	}
	if err := r.setup.CheckPrompts(m, r.family.Tok, r.supervised); err != nil {
		return err
	}
	c.Rollout.EOS = r.family.EOS
	r.setEpisodes(c)
	r.spreadSteps(c)
	if r.dryRun {
		return r.printFootprint(a, m)
	}
	if err := checkOptimizerFlags(c.Settings, c.Steps); err != nil {
		return err
	}
	tr, completed, err := a.build(r, m, l)
	if err != nil {
		return flagNamed(fs, err)
	}
	tr.SetLossScaler(r.lossScaler())
	if r.environment != nil {
		if err := tr.SetEnvironment(*r.environment); err != nil {
			return flagNamed(fs, err)
		}
	}
	if err := r.joinTrainer(tr); err != nil {
		return err
	}
	if err := r.restore(tr, c.Steps); err != nil {
		return err
	}
	if err := r.writeConfig(a.name, m, completed); err != nil {
		return err
	}
	return r.loop(a.name, tr, c.Steps)
}

// setEpisodes gives the trainer's config the episodes of --env (nothing without it) and the
// held-out evaluation the same environment, its turns as long as training's.
func (r *rlRun) setEpisodes(c *rl.TrainConfig) {
	if r.environment == nil {
		c.Episodes, c.MaskToolSyntax = nil, false
		return
	}
	limits := r.env.Limits
	c.Episodes, c.MaskToolSyntax = &limits, r.env.MaskToolSyntax
	r.setup.Episodes = &rl.EvalConfig{Env: r.environment, Episodes: &limits, MaxNewTokens: c.Rollout.MaxNewTokens}
}

// flagNamed rewrites a config error that starts with a setting's JSON name ("group_size 0:
// want >= 1") to name its flag instead ("--group-size 0: ..."), when the command has one.
func flagNamed(fs *pflag.FlagSet, err error) error {
	msg := err.Error()
	name, rest, ok := strings.Cut(msg, " ")
	if !ok || !strings.Contains(name, "_") {
		return err
	}
	flag := strings.ReplaceAll(name, "_", "-")
	if fs.Lookup(flag) == nil {
		return err
	}
	return fmt.Errorf("--%s %s", flag, rest)
}

// printFootprint prints the memory the run's configuration takes on its device, for the longest
// prompt it may draw, against what is available.
func (r *rlRun) printFootprint(a rlAlgorithm, m rl.Policy) error {
	cfg, prompt := *a.train, r.longestPrompt()
	if cfg.Episodes != nil { // at its longest an episode fills its context: one long completion
		prompt, cfg.Rollout.MaxNewTokens = 1, min(cfg.Episodes.MaxEpisodeTokens, m.MaxSeqLen())-1
	}
	fp, err := rl.EstimateFootprint(m, cfg, a.rows(), prompt, a.reference())
	if err != nil {
		return err
	}
	line := fmt.Sprintf("memory on %s: %v", r.be.Name(), fp)
	if budget, source, known := tensor.Budget(r.be); known {
		line += fmt.Sprintf(" of %s available (%s)", tensor.HumanBytes(int64(budget)), source)
	}
	fmt.Fprintln(stdout, line)
	return nil
}

// longestPrompt is the most tokens a prompt of the run has: a dataset's prompts, the held-out
// ones, and for the built-in tasks a sample of the training stream (a dry run trains nothing).
func (r *rlRun) longestPrompt() int {
	n := 1
	enc := func(text string) { n = max(n, len(r.family.Tok.Encode(text))) }
	for _, p := range r.setup.Prompts {
		enc(p.Text)
	}
	for _, p := range r.setup.HeldOut {
		enc(p.Text)
	}
	if r.setup.Mix != nil {
		for range 256 {
			p, err := r.setup.Train.Next()
			if err != nil {
				break
			}
			enc(p.Text)
		}
	}
	return n
}
