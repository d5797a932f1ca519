package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// rlRun is the shared skeleton of the sft, grpo and ppo commands.
type rlRun struct {
	common *commonFlags
	tasks  rlrun.Tasks
	// env makes each prompt a multi-turn episode (grpo, ppo); environment is what the
	// episodes run in, set up with the model family.
	env         rlrun.Env
	environment *rl.Environment
	init        string
	// initTask takes the task flags from --init's run (rlrun.Tasks.inherit).
	initTask bool
	// supervised: the command trains on the prompts' answers (sft).
	supervised   bool
	runDir       string
	opts         rlrun.RunOptions
	log, metrics zerolog.Logger
	closeMetrics func(failed bool)
	metricsOut   *rundir.MetricsWriter
	completions  *rlrun.CompletionLog
	held         *rundir.Held // the run directory, owned for the run's life
	overwrite    bool
	reportTo     []string
	be           tensor.Backend
	evalTemp     float64 // temperature of the sampled accuracy
	family       *rlrun.Family
	setup        *rlrun.Setup
	// resumed is the run being continued (--resume), nil for a new run.
	resumed *rlrun.Resumed
	lora    rlrun.LoRA
	// presetType, when set, names the model_type of the Llama-family model a command makes
	// without --init (sft --preset).
	presetType func() string
	// cluster is this process's place in a data-parallel sft job (nil: one process).
	cluster *cluster.Member
	// dryRun prints the footprint of the configuration and stops before training (grpo, ppo).
	dryRun bool
	// precision is --precision: fp32, bf16 or fp16 (with the loss scaled, lossScaler).
	precision string
}

func addRunFlags(fs *pflag.FlagSet, r *rlRun, initHelp string) {
	fs.StringVar(&r.init, "init", "", initHelp)
	fs.BoolVar(&r.initTask, "init-task", false, "take the task flags not given here from --init's run: its built-in tasks, or its dataset, fields and verifiers (never its --reward-cmd); without it --init brings only the model")
	fs.StringVar(&r.runDir, "run-dir", "", "where to write config.json, metrics.jsonl and the checkpoint (default: runs/<command>-<task>-<time>; with --resume: the resumed run's directory)")
	fs.IntVar(&r.opts.EvalEvery, "eval-every", 0, "also measure held-out accuracy every this many steps (0: only before and after)")
	fs.IntVar(&r.opts.SaveEvery, "save-every", 100, "write the checkpoint, with optimizer state to continue from, every this many steps (0: only at the end, at --stop-at and on Ctrl-C)")
	fs.IntVar(&r.opts.StopAt, "stop-at", 0, "save and stop once this many steps are taken, to be continued later with --resume (0: run to --steps)")
	fs.StringSliceVar(&r.reportTo, "report-to", []string{"jsonl", "tensorboard"}, "records to keep beside metrics.jsonl (always written): tensorboard (event files for TensorBoard), or none")
	fs.BoolVar(&r.overwrite, "overwrite", false, "replace the run already in --run-dir (default: refuse; continue it with --resume)")
	fs.StringVar(&r.opts.Resume, "resume", "", "continue a run from its directory, bit for bit on the CPU (parameters, optimizer, reference, RNG and prompt position); only --steps and the run-loop flags may change")
	addLoRAFlags(fs, &r.lora)
	fs.IntVar(&r.opts.LogCompletions, "log-completions", 0, "grpo, ppo: write this many sampled completions a step, with their rewards, to completions.jsonl in the run directory")
	fs.StringVar(&r.precision, "precision", "fp32", precisionHelp)
}

// start opens the backend, tokenizer, tasks, run directory and metrics file. With --resume the
// run's own settings replace the flags first (see loadResume, which spec drives).
func (r *rlRun) start(fs *pflag.FlagSet, command string, spec resumeSpec) error {
	if err := r.joinCluster(command); err != nil {
		return err
	}
	r.log = r.common.logger()
	if o := r.opts; o.EvalEvery < 0 || o.SaveEvery < 0 || o.StopAt < 0 || o.LogCompletions < 0 {
		return fmt.Errorf("--eval-every %d, --save-every %d, --stop-at %d, --log-completions %d: want >= 0", o.EvalEvery, o.SaveEvery, o.StopAt, o.LogCompletions)
	}
	if r.opts.Resume != "" {
		var err error
		if r.resumed, err = r.loadResume(fs, command, spec); err != nil {
			return err
		}
	} else if r.initTask {
		if err := inheritTasks(&r.tasks, fs, r.init, r.log); err != nil {
			return err
		}
	}
	if err := checkEnvFlags(&r.env, fs); err != nil {
		return err
	}
	if err := r.openInputs(); err != nil {
		return err
	}
	if r.runDir == "" {
		r.runDir = r.defaultRunDir(command)
	}
	if !r.cluster.Main() || r.dryRun { // rank 0 writes the run's files; a dry run none
		r.metrics = zerolog.Nop()
		r.closeMetrics = func(bool) { r.setup.Close() }
		return nil
	}
	if err := r.openRunFiles(); err != nil {
		r.setup.Close()
		return err
	}
	return nil
}

// openInputs opens the backend, the model family's tokenizer and the prompts.
func (r *rlRun) openInputs() error {
	var err error
	if r.be, err = r.common.backend(r.log); err != nil {
		return err
	}
	if err := r.applyPrecision(); err != nil {
		return err
	}
	hfDir, err := r.hfDir()
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	if r.family, err = rlrun.OpenFamily(hfDir, r.modelType()); err != nil {
		return fmt.Errorf("--init %s: %w", r.init, err)
	}
	o := rlrun.SetupOptions{Supervised: r.supervised, Announce: r.logRewardCmd, Log: r.log, Env: r.env.Label()}
	if !r.common.quiet {
		o.Progress = os.Stderr
	}
	r.setup, err = r.tasks.Setup(r.family, o)
	if err != nil || !r.env.Active() {
		return err
	}
	r.logEnvCmd()
	e, closeEnv, err := r.env.Environment(r.family)
	if err != nil {
		r.setup.Close()
		return err
	}
	r.environment = e
	r.setup.AddCloser(func() {
		if err := closeEnv(); err != nil {
			r.log.Warn().Err(err).Msg("environment")
		}
	})
	return nil
}

// logRewardCmd says which reward program is about to start; a resumed run's comes from its
// config.json, so it is shown as a warning, even with --quiet, before it runs.
func (r *rlRun) logRewardCmd() {
	cmd := r.tasks.Data.RewardCmd
	switch {
	case cmd == "":
	case r.resumed != nil:
		r.log.Warn().Str("reward_cmd", cmd).Str("from", filepath.Join(filepath.Dir(r.resumed.Path), rundir.Config)).
			Msg("starting the resumed run's reward program")
	default:
		r.log.Info().Str("reward_cmd", cmd).Msg("starting the reward program")
	}
}

// logEnvCmd says that the environment program starts, as a warning when it is a resumed run's
// (a command read from a run directory).
func (r *rlRun) logEnvCmd() {
	switch cmd := r.env.Cmd; {
	case cmd == "":
	case r.resumed != nil:
		r.log.Warn().Str("env_cmd", cmd).Str("from", filepath.Join(filepath.Dir(r.resumed.Path), rundir.Config)).
			Msg("starting the resumed run's environment program")
	default:
		r.log.Info().Str("env_cmd", cmd).Int("workers", r.env.Workers).Msg("starting the environment program")
	}
}

// defaultRunDir is runs/<command>-<task or dataset>-<time>.
func (r *rlRun) defaultRunDir(command string) string {
	name := strings.NewReplacer(":", "", ",", "+").Replace(r.tasks.Spec)
	if r.env.Active() {
		name = r.env.Label()
	}
	if r.tasks.Data.Path != "" {
		name = strings.TrimSuffix(filepath.Base(r.tasks.Data.Path), filepath.Ext(r.tasks.Data.Path))
	}
	return rundir.Default(command+"-"+name, time.Now())
}

// openRunFiles claims the run directory and opens its metrics and completions logs (dropping,
// on a resume, the lines of steps taken after the checkpoint); on an error it lets the
// directory go.
func (r *rlRun) openRunFiles() (err error) {
	if r.held, err = rundir.Claim(r.runDir, r.resumed != nil, r.overwrite); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			r.held.Release(true)
		}
	}()
	resumedStep := 0
	if r.resumed != nil {
		resumedStep = r.resumed.State.Step
	}
	tensorboard, err := rundir.ReportTo(r.reportTo)
	if err != nil {
		return err
	}
	var dropped int
	if r.metricsOut, dropped, err = rundir.OpenMetrics(r.runDir, r.resumed != nil, resumedStep, tensorboard); err != nil {
		return err
	}
	r.metrics = r.metricsOut.Logger()
	if dropped > 0 {
		r.log.Warn().Int("lines", dropped).Int("step", resumedStep).
			Msg("dropped metric lines written after the checkpoint (those steps run again)")
	}
	if r.completions, err = rlrun.OpenCompletionLog(r.runDir, r.opts.LogCompletions, resumedStep, r.resumed != nil); err != nil {
		r.metricsOut.Close()
		return fmt.Errorf("--log-completions: %w", err)
	}
	r.closeMetrics = func(failed bool) {
		if err := r.metricsOut.Close(); err != nil {
			r.log.Error().Err(err).Msg("metrics")
		}
		if err := r.completions.Close(); err != nil {
			r.log.Error().Err(err).Msg("completions")
		}
		r.setup.Close()
		r.held.Release(failed)
	}
	return nil
}

// hfDir is the Hugging Face directory the run's model and tokenizer come from: --init itself, or
// the directory a run given as --init (or resumed) started from; "" for GPT-2.
func (r *rlRun) hfDir() (string, error) {
	if r.resumed != nil {
		return r.resumed.HFDir, nil
	}
	if r.init == "" {
		return "", nil
	}
	if ok, err := load.IsLlamaDir(r.init); err != nil || !ok {
		return load.HFDirOfRun(r.init), err
	}
	if abs, err := filepath.Abs(r.init); err == nil {
		return abs, nil
	}
	return r.init, nil
}

func (r *rlRun) loadInit(required bool) (rl.Policy, *load.Loaded, error) {
	if r.init == "" {
		if required {
			return nil, nil, fmt.Errorf("--init is required: the model to fine-tune (a Hugging Face Llama/Qwen directory, a run directory of vkgrad sft, or any checkpoint)")
		}
		return nil, nil, nil
	}
	m, l, err := r.loadPolicy(r.init)
	if err != nil {
		return nil, nil, fmt.Errorf("--init: %w", err)
	}
	if err := r.lora.AddAdapters(m); err != nil {
		return nil, nil, err
	}
	if m.VocabSize() < r.family.Tok.VocabSize() {
		return nil, nil, fmt.Errorf("--init %s: vocabulary of %d is smaller than its tokenizer's %d", r.init, m.VocabSize(), r.family.Tok.VocabSize())
	}
	format := "Hugging Face directory"
	if l != nil {
		format = string(l.Format)
	}
	r.log.Info().Str("format", format).Str("path", r.init).Str("model", rlrun.DescribePolicy(m)).Msg("initial model")
	return m, l, nil
}

// model returns the model to train: with --resume one of the run's shape (its parameters come
// with the trainer's Restore), else --init's (required or not).
func (r *rlRun) model(required bool) (m rl.Policy, l *load.Loaded, err error) {
	if r.resumed == nil {
		m, l, err = r.loadInit(required)
	} else {
		m, err = r.policyOf(r.resumed.Loaded) // the trainer's Restore brings the optimizer and the rest
	}
	if err != nil || m == nil {
		return nil, nil, err
	}
	return m, l, rlrun.LimitVocab(m, r.family.Tok, r.log)
}

// restore continues tr from the resumed run's checkpoint (nothing without --resume); steps is
// the run's total, which must leave a step to take.
func (r *rlRun) restore(tr checkpointer, steps int) error {
	res := r.resumed
	if res == nil {
		return nil
	}
	if res.Stopped != "" {
		return fmt.Errorf("--resume %s: the run ended at step %d (%s); start a new run from it with --init", res.Path, res.State.Step, res.Stopped)
	}
	if steps <= res.State.Step {
		return fmt.Errorf("--resume %s: the run has taken %d of --steps %d; pass a larger --steps to continue it", res.Path, res.State.Step, steps)
	}
	if err := tr.Restore(res.State, res.Path); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	r.log.Info().Int("step", res.State.Step).Int("steps", steps).Str("from", res.Path).Msg("resumed")
	return nil
}

func (r *rlRun) writeConfig(command string, m rl.Policy, cfg any) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	opts := r.opts
	if !r.cluster.Main() {
		return nil
	}
	meta := rlrun.RunMeta{Command: command, HFDir: r.family.HFDir, Init: r.init, Tasks: r.tasks, Config: raw, Run: &opts, LoRA: r.lora, Precision: r.precision}
	if r.env.Active() {
		meta.Env = &r.env
	}
	switch p := m.(type) {
	case *nn.GPT2LM:
		meta.Model = &p.Model.Config
	case *nn.LlamaLM:
		meta.Llama = &p.Model.Config
	}
	return rundir.WriteConfig(r.runDir, meta)
}

// finish prints the accuracies and where the results are.
func (r *rlRun) finish(before, after *rl.EvalResult, wall time.Duration, ckpt string) {
	if before != nil && after != nil {
		fmt.Fprintf(stdout, "held-out accuracy (greedy): %s -> %s (%+.1f points) in %s\n", evalLine(before), evalLine(after),
			100*(after.Accuracy-before.Accuracy), wall.Round(time.Second))
		if r.tasks.EvalSamples > 0 {
			fmt.Fprintf(stdout, "held-out accuracy (%d samples per problem at temperature %g): %.1f%% -> %.1f%% (%+.1f points)\n",
				r.tasks.EvalSamples, r.evalTemp, 100*before.SampledAccuracy, 100*after.SampledAccuracy, 100*(after.SampledAccuracy-before.SampledAccuracy))
		}
	}
	fmt.Fprintf(stdout, "checkpoint: %s\nmetrics:    %s\n", ckpt, filepath.Join(r.runDir, rundir.Metrics))
	if r.cluster.Main() {
		fmt.Fprintf(stdout, "curves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", drawRunCurves(r.runDir), r.runDir, r.runDir)
	}
}
