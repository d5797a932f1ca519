package rlrun

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/device"
	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// Run is one sft, grpo or ppo run: its settings (from the command's flags, replaced on
// --resume by the run's own), what its command brings from outside the flags, and what start
// opens for it.
type Run struct {
	// Command is sft, grpo or ppo.
	Command string
	Tasks   Tasks
	// Env makes each prompt a multi-turn episode (grpo, ppo).
	Env  Env
	Init string
	// InitTask takes the task flags not given from --init's run (see inheritTasks).
	InitTask  bool
	RunDir    string
	Opts      RunOptions
	ReportTo  []string
	Overwrite bool
	LoRA      LoRA
	// Precision is --precision: fp32, bf16 or fp16 (with the loss scaled, precision.LossScaler).
	Precision string
	// DryRun prints the footprint of the configuration and stops before training (grpo, ppo).
	DryRun bool

	// Supervised: the command trains on the prompts' answers (sft).
	Supervised bool
	// EvalTemp is the temperature of the sampled accuracy.
	EvalTemp float64
	// PresetType, when set, names the model_type of the Llama-family model a command makes
	// without --init (sft --preset).
	PresetType func() string
	// Line is what the command line says beyond the settings.
	Line CommandLine
	// Cluster is this process's place in a data-parallel job (nil: one process).
	Cluster *cluster.Member
	Log     zerolog.Logger
	// Stdout takes the results; Progress, when not nil, shows a dataset's loading.
	Stdout, Progress io.Writer
	// Version is vkgrad's, part of the key of the cached accuracy before training.
	Version string
	// Device and Threads are --device and --threads: the backend start opens
	// (device.OpenLogged), then sets its products' precision.
	Device  string
	Threads int
	// OnStep, when set, runs after each step with the context Ctrl-C cancels.
	OnStep func(ctx context.Context) func(step int, metrics map[string]float64) error

	// Set up by start.
	Be          tensor.Backend
	Family      *Family
	Setup       *Setup
	Environment *rl.Environment
	// Resumed is the run being continued (--resume), nil for a new run.
	Resumed *Resumed
	Metrics zerolog.Logger

	closeMetrics func(failed bool)
	metricsOut   *rundir.MetricsWriter
	completions  *CompletionLog
	held         *rundir.Held // the run directory, owned for the run's life
}

// start opens the backend, tokenizer, tasks, run directory and metrics file. With --resume the
// run's own settings replace the flags first (see loadResume). Once it succeeds, Close ends
// the run.
func (r *Run) start() error {
	if o := r.Opts; o.EvalEvery < 0 || o.SaveEvery < 0 || o.StopAt < 0 || o.LogCompletions < 0 {
		return fmt.Errorf("--eval-every %d, --save-every %d, --stop-at %d, --log-completions %d: want >= 0", o.EvalEvery, o.SaveEvery, o.StopAt, o.LogCompletions)
	}
	if r.Opts.Resume != "" {
		var err error
		if r.Resumed, err = r.loadResume(); err != nil {
			return err
		}
	} else if r.InitTask {
		if err := r.inheritTasks(); err != nil {
			return err
		}
	}
	if err := r.Env.Check(r.Line.Given, r.Line.Defined); err != nil {
		return err
	}
	if err := r.openInputs(); err != nil {
		return err
	}
	if r.RunDir == "" {
		r.RunDir = r.defaultRunDir()
	}
	if !r.Cluster.Main() || r.DryRun { // rank 0 writes the run's files; a dry run none
		r.Metrics = zerolog.Nop()
		r.closeMetrics = func(bool) { r.Setup.Close() }
		return nil
	}
	if err := r.openRunFiles(); err != nil {
		r.Setup.Close()
		return err
	}
	return nil
}

// Close closes the run's files and inputs and lets its directory go (as a failed run's when
// failed).
func (r *Run) Close(failed bool) { r.closeMetrics(failed) }

// openInputs opens the backend, the model family's tokenizer and the prompts.
func (r *Run) openInputs() error {
	var err error
	if r.Be, err = device.OpenLogged(r.Device, r.Threads, r.Log); err != nil {
		return err
	}
	if _, err := precision.Set(r.Be, r.Precision); err != nil {
		return err
	}
	hfDir, err := r.hfDir()
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	if r.Family, err = OpenFamily(hfDir, r.modelType()); err != nil {
		return fmt.Errorf("--init %s: %w", r.Init, err)
	}
	o := SetupOptions{Supervised: r.Supervised, Announce: r.logRewardCmd, Log: r.Log, Env: r.Env.Label(), Progress: r.Progress}
	r.Setup, err = r.Tasks.Setup(r.Family, o)
	if err != nil || !r.Env.Active() {
		return err
	}
	r.logEnvCmd()
	e, closeEnv, err := r.Env.Environment(r.Family)
	if err != nil {
		r.Setup.Close()
		return err
	}
	r.Environment = e
	r.Setup.AddCloser(func() {
		if err := closeEnv(); err != nil {
			r.Log.Warn().Err(err).Msg("environment")
		}
	})
	return nil
}

// logRewardCmd says which reward program is about to start; a resumed run's comes from its
// config.json, so it is shown as a warning, even with --quiet, before it runs.
func (r *Run) logRewardCmd() {
	cmd := r.Tasks.Data.RewardCmd
	switch {
	case cmd == "":
	case r.Resumed != nil:
		r.Log.Warn().Str("reward_cmd", cmd).Str("from", filepath.Join(filepath.Dir(r.Resumed.Path), rundir.Config)).
			Msg("starting the resumed run's reward program")
	default:
		r.Log.Info().Str("reward_cmd", cmd).Msg("starting the reward program")
	}
}

// logEnvCmd says that the environment program starts, as a warning when it is a resumed run's
// (a command read from a run directory).
func (r *Run) logEnvCmd() {
	switch cmd := r.Env.Cmd; {
	case cmd == "":
	case r.Resumed != nil:
		r.Log.Warn().Str("env_cmd", cmd).Str("from", filepath.Join(filepath.Dir(r.Resumed.Path), rundir.Config)).
			Msg("starting the resumed run's environment program")
	default:
		r.Log.Info().Str("env_cmd", cmd).Int("workers", r.Env.Workers).Msg("starting the environment program")
	}
}

// defaultRunDir is runs/<command>-<task or dataset>-<time>.
func (r *Run) defaultRunDir() string {
	name := strings.NewReplacer(":", "", ",", "+").Replace(r.Tasks.Spec)
	if r.Env.Active() {
		name = r.Env.Label()
	}
	if r.Tasks.Data.Path != "" {
		name = strings.TrimSuffix(filepath.Base(r.Tasks.Data.Path), filepath.Ext(r.Tasks.Data.Path))
	}
	return rundir.Default(r.Command+"-"+name, time.Now())
}

// openRunFiles claims the run directory and opens its metrics and completions logs (dropping,
// on a resume, the lines of steps taken after the checkpoint); on an error it lets the
// directory go.
func (r *Run) openRunFiles() (err error) {
	if r.held, err = rundir.Claim(r.RunDir, r.Resumed != nil, r.Overwrite); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			r.held.Release(true)
		}
	}()
	resumedStep := 0
	if r.Resumed != nil {
		resumedStep = r.Resumed.State.Step
	}
	tensorboard, err := rundir.ReportTo(r.ReportTo)
	if err != nil {
		return err
	}
	var dropped int
	if r.metricsOut, dropped, err = rundir.OpenMetrics(r.RunDir, r.Resumed != nil, resumedStep, tensorboard); err != nil {
		return err
	}
	r.Metrics = r.metricsOut.Logger()
	if dropped > 0 {
		r.Log.Warn().Int("lines", dropped).Int("step", resumedStep).
			Msg("dropped metric lines written after the checkpoint (those steps run again)")
	}
	if r.completions, err = OpenCompletionLog(r.RunDir, r.Opts.LogCompletions, resumedStep, r.Resumed != nil); err != nil {
		r.metricsOut.Close()
		return fmt.Errorf("--log-completions: %w", err)
	}
	r.closeMetrics = func(failed bool) {
		if err := r.metricsOut.Close(); err != nil {
			r.Log.Error().Err(err).Msg("metrics")
		}
		if err := r.completions.Close(); err != nil {
			r.Log.Error().Err(err).Msg("completions")
		}
		r.Setup.Close()
		r.held.Release(failed)
	}
	return nil
}

// hfDir is the Hugging Face directory the run's model and tokenizer come from: the resumed
// run's, else --init's (HFDirOf).
func (r *Run) hfDir() (string, error) {
	if r.Resumed != nil {
		return r.Resumed.HFDir, nil
	}
	return HFDirOf(r.Init)
}

// HFDirOf is the Hugging Face directory a model and its tokenizer come from: init itself, or
// the directory a run given as init started from; "" for GPT-2 (and no init).
func HFDirOf(init string) (string, error) {
	if init == "" {
		return "", nil
	}
	if ok, err := load.IsLlamaDir(init); err != nil || !ok {
		return load.HFDirOfRun(init), err
	}
	if abs, err := filepath.Abs(init); err == nil {
		return abs, nil
	}
	return init, nil
}

// modelType is the model_type of the Llama-family model a run trains over GPT-2's tokenizer:
// the resumed run's, --init's checkpoint's, or the new model's preset (PresetType); "" for a
// GPT-2.
func (r *Run) modelType() string {
	if r.Resumed != nil {
		if r.Resumed.Llama != nil {
			return r.Resumed.Llama.ModelType
		}
		return ""
	}
	if r.Init != "" {
		return ModelTypeOf(r.Init)
	}
	if r.PresetType != nil {
		return r.PresetType()
	}
	return ""
}

// ModelTypeOf is the model_type of the Llama-family checkpoint at init; "" for anything else.
func ModelTypeOf(init string) string {
	if p, err := load.Resolve(init); err == nil {
		if st, err := checkpoint.Peek(p); err == nil && st.Llama != nil {
			return st.Llama.ModelType
		}
	}
	return ""
}
