package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
	"github.com/vkgrad/vkgrad/tensor"
)

// taskFlags choose the prompts: built-in tasks mixed by ratio and their options. They are saved
// in the run's config.json, and a later command started with --init on that run reuses them
// unless a flag is given.
type taskFlags struct {
	Spec     string        `json:"task"`
	Options  tasks.Options `json:"task_options"`
	Shuffle  bool          `json:"shuffle_tasks"`
	DataSeed uint64        `json:"data_seed"`
	EvalSize int           `json:"eval_size"`
	EvalSeed uint64        `json:"eval_seed"`
	EvalMax  int           `json:"eval_max_new_tokens"`
	// EvalSamples answers are also sampled per problem at the run's temperature.
	EvalSamples int `json:"eval_samples"`
	// Data, when its Path is set, replaces the built-in tasks with a dataset file.
	Data datasetFlags `json:"data"`
}

// rlRunMeta is the config.json of an sft, grpo or ppo run.
type rlRunMeta struct {
	Command string        `json:"command"`
	Model   *gpt2.Config  `json:"model,omitempty"`
	Llama   *llama.Config `json:"llama,omitempty"`
	// HFDir is the Hugging Face directory a Llama-family run's tokenizer comes from.
	HFDir string `json:"hf_dir,omitempty"`
	// LoRA are the adapters added to --init\'s model.
	LoRA   loraFlags       `json:"lora"`
	Init   string          `json:"init,omitempty"`
	Tasks  taskFlags       `json:"tasks"`
	Config json.RawMessage `json:"config"`
	Run    *runOptions     `json:"run,omitempty"`
}

func defaultTaskFlags() taskFlags {
	o := tasks.DefaultOptions()
	o.Addition.MinDigits, o.Addition.MaxDigits = 2, 2
	return taskFlags{Spec: "addition", Options: o, DataSeed: 1, EvalSize: 500, EvalSeed: 12345, EvalMax: 8, EvalSamples: 4,
		Data: defaultDatasetFlags()}
}

func addTaskFlags(fs *pflag.FlagSet, t *taskFlags) {
	fs.StringVar(&t.Spec, "task", t.Spec, "built-in task, or tasks mixed by ratio, e.g. addition:0.8,reverse:0.2 (tasks: "+strings.Join(tasks.BuiltinNames, ", ")+")")
	a := &t.Options.Addition
	fs.IntVar(&a.MinDigits, "min-digits", a.MinDigits, "addition: fewest digits of an operand")
	fs.IntVar(&a.MaxDigits, "max-digits", a.MaxDigits, "addition: most digits of an operand")
	fs.BoolVar(&a.Spaced, "spaced", a.Spaced, "addition: one token per digit (\"1 2 + 3 4 =\"); --spaced=false writes \"12+34=\"")
	fs.BoolVar(&a.ReversedAnswer, "reversed-answer", a.ReversedAnswer, "addition: write the sum units digit first (easier to learn)")
	fs.Float64Var(&a.HeldOutFraction, "held-out-fraction", a.HeldOutFraction, "addition: share of problems held out for evaluation")
	fs.BoolVar(&a.PartialCredit, "partial-credit", a.PartialCredit, "addition: score well-formed wrong answers 0.1..0.5 by matching digits instead of 0")
	c := &t.Options.Copy
	fs.IntVar(&c.MinLen, "copy-min-len", c.MinLen, "copy/reverse: fewest letters")
	fs.IntVar(&c.MaxLen, "copy-max-len", c.MaxLen, "copy/reverse: most letters")
	fs.StringVar(&c.Alphabet, "copy-alphabet", c.Alphabet, "copy/reverse: letters to draw from")
	fs.StringVar(&c.EndMarker, "copy-end-marker", c.EndMarker, "copy/reverse: fixed text after the letters (a forced token; empty for none)")
	fs.Float64Var(&c.HeldOutFraction, "copy-held-out-fraction", c.HeldOutFraction, "copy/reverse: share of strings held out for evaluation")
	fs.BoolVar(&c.PartialCredit, "copy-partial-credit", c.PartialCredit, "copy/reverse: score well-formed wrong answers 0.1..0.5 instead of 0")
	fs.BoolVar(&t.Shuffle, "shuffle-tasks", t.Shuffle, "with several tasks, pick each prompt's task at random by weight (default: exact interleaving by ratio)")
	fs.Uint64Var(&t.DataSeed, "data-seed", t.DataSeed, "seed of the training prompt stream")
	fs.IntVar(&t.EvalSize, "eval-size", t.EvalSize, "held-out problems per task for the accuracy before and after (0: no evaluation)")
	fs.Uint64Var(&t.EvalSeed, "eval-seed", t.EvalSeed, "seed that picks the held-out problems")
	fs.IntVar(&t.EvalMax, "eval-max-new-tokens", t.EvalMax, "longest answer generated in evaluation")
	fs.IntVar(&t.EvalSamples, "eval-samples", t.EvalSamples, "answers sampled per held-out problem at the training temperature for the sampled accuracy (0: greedy only)")
	addDatasetFlags(fs, &t.Data)
}

// source names where the prompts come from, for the log: the dataset file or the tasks.
func (t *taskFlags) source() string {
	if t.Data.Path != "" {
		return t.Data.Path
	}
	return "task " + t.Spec
}

// inherit replaces the task flags the user did not set with those of the run that made init.
func (t *taskFlags) inherit(fs *pflag.FlagSet, initPath string, log zerolog.Logger) {
	if initPath == "" {
		return
	}
	p, err := load.Resolve(initPath)
	if err != nil {
		return
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(p), "config.json"))
	if err != nil {
		return
	}
	var meta rlRunMeta
	if json.Unmarshal(raw, &meta) != nil || meta.Tasks.Spec == "" {
		return
	}
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	*t = meta.Tasks
	if t.Data.Path == "" { // the initial run used built-in tasks (or predates datasets)
		t.Data = defaultDatasetFlags()
	}
	for name, v := range given {
		_ = setFlag(t, name, v) // only task flags exist in setFlag's set; others fail harmlessly
	}
	log.Info().Str("task", t.Spec).Str("from", filepath.Join(filepath.Dir(p), "config.json")).Msg("task options of the initial run")
}

// setFlag sets one task flag on t by name.
func setFlag(t *taskFlags, name, value string) error {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addTaskFlags(fs, t)
	return fs.Set(name, value)
}

// taskSetup is everything a command needs from the task flags.
type taskSetup struct {
	mix     *tasks.Mix // nil for a dataset
	train   rl.PromptSource
	reward  *rl.Combined
	heldOut []rl.Prompt
	enc     tasks.Encoder
	closers []func() // an external reward process
}

// close stops what setup started.
func (s *taskSetup) close() {
	for _, f := range s.closers {
		f()
	}
}

func (t *taskFlags) setup(fam *modelFamily) (*taskSetup, error) {
	if t.EvalSize < 0 {
		return nil, fmt.Errorf("--eval-size %d: want >= 0", t.EvalSize)
	}
	if t.EvalSamples < 0 {
		return nil, fmt.Errorf("--eval-samples %d: want >= 0", t.EvalSamples)
	}
	if t.EvalMax < 1 {
		return nil, fmt.Errorf("--eval-max-new-tokens %d: want >= 1", t.EvalMax)
	}
	enc := tasks.EncoderOf(fam.tok.Encode)
	if t.Data.Path != "" {
		return t.Data.setup(t, enc, fam.chat)
	}
	if fam.hfDir != "" {
		return nil, fmt.Errorf("the built-in tasks (--task %s) are made for GPT-2's tokenizer; give a Llama-family model its prompts with --dataset FILE", t.Spec)
	}
	if t.Data.Reward != "" || t.Data.RewardCmd != "" {
		return nil, fmt.Errorf("--reward and --reward-cmd score --dataset prompts; the built-in --task %s has its own reward", t.Spec)
	}
	mix, err := tasks.NewMix(t.Spec, t.Options)
	if err != nil {
		return nil, fmt.Errorf("--task: %w", err)
	}
	src, err := mix.Source(tasks.Train, t.Shuffle, t.DataSeed)
	if err != nil {
		return nil, err
	}
	tr, err := mix.Reward()
	if err != nil {
		return nil, err
	}
	reward, err := rl.NewCombined(rl.Weighted{Reward: tr, Weight: 1})
	if err != nil {
		return nil, err
	}
	s := &taskSetup{mix: mix, train: tasks.RLSource(src, enc), reward: reward, enc: enc}
	if t.EvalSize > 0 {
		ps, err := mix.HeldOut(t.EvalSize, t.EvalSeed)
		if err != nil {
			return nil, err
		}
		if s.heldOut, err = tasks.RLPrompts(ps, enc); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// evaluate reports held-out accuracy, greedy and sampled at temp (nil when there is no
// held-out set).
func (s *taskSetup) evaluate(m rl.Policy, t *taskFlags, fam *modelFamily, temp float64) (*rl.EvalResult, error) {
	if len(s.heldOut) == 0 {
		return nil, nil
	}
	return rl.Evaluate(m, fam.tok, s.heldOut, s.reward, rl.EvalConfig{MaxNewTokens: t.EvalMax, EOS: fam.eos, Success: 1,
		Samples: t.EvalSamples, Sampling: rl.Sampling{Temperature: temp, TopP: 1}, Seed: t.EvalSeed})
}

func evalLine(r *rl.EvalResult) string {
	if r == nil {
		return "n/a"
	}
	s := fmt.Sprintf("%.1f%% (%d problems, mean reward %.3f)", 100*r.Accuracy, r.N, r.MeanReward)
	if len(r.ByTask) > 1 {
		var parts []string
		for name, e := range r.ByTask {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", name, 100*e.Accuracy))
		}
		s += " [" + strings.Join(sortedStrings(parts), ", ") + "]"
	}
	return s
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func logEval(log, metrics zerolog.Logger, step int, when string, r *rl.EvalResult) {
	if r == nil {
		return
	}
	ev := metrics.Log().Str("kind", "eval").Int("step", step).Str("when", when).Float64("accuracy", r.Accuracy).
		Float64("sampled_accuracy", r.SampledAccuracy).Float64("mean_reward", r.MeanReward).Int("n", r.N)
	for name, e := range r.ByTask {
		ev = ev.Float64("accuracy/"+name, e.Accuracy).Float64("sampled_accuracy/"+name, e.SampledAccuracy)
	}
	ev.Msg("")
	log.Info().Int("step", step).Float64("accuracy", r.Accuracy).Float64("sampled_accuracy", r.SampledAccuracy).
		Float64("mean_reward", r.MeanReward).Msg("held-out accuracy " + when)
}

// addRLTrainFlags registers the options every RL trainer shares.
func addRLTrainFlags(fs *pflag.FlagSet, c *rl.TrainConfig) {
	fs.IntVar(&c.Steps, "steps", c.Steps, "RL steps (each: sample a batch, score it, update)")
	fs.IntVar(&c.PromptsPerStep, "prompts", c.PromptsPerStep, "distinct prompts per step")
	fs.Float64Var(&c.Rollout.Sampling.Temperature, "temperature", c.Rollout.Sampling.Temperature, "sampling temperature, also used by the loss's log-probs")
	fs.IntVar(&c.Rollout.Sampling.TopK, "top-k", c.Rollout.Sampling.TopK, "sample from the k most likely tokens, ties at the k-th kept (0: all; see --replay-truncation)")
	fs.Float64Var(&c.Rollout.Sampling.TopP, "top-p", c.Rollout.Sampling.TopP, "sample from the smallest set of most likely tokens reaching this probability, ties kept (1: all; see --replay-truncation)")
	fs.BoolVar(&c.ReplayTruncation, "replay-truncation", c.ReplayTruncation, "with --top-k or --top-p, compute the loss's log-probs (policy, old, reference) and entropy under the same truncated distribution the tokens were sampled from, so training is on-policy; --replay-truncation=false uses the full distribution (an off-policy bias)")
	fs.IntVar(&c.Rollout.MaxNewTokens, "max-new-tokens", c.Rollout.MaxNewTokens, "longest completion, EOS included (also dr_grpo's normaliser)")
	fs.IntVar(&c.Rollout.GenBatch, "gen-batch", c.Rollout.GenBatch, "most rows decoded together (0: all rows of one prompt length)")
	fs.IntVar(&c.Mu, "mu", c.Mu, "optimizer updates per batch (GRPO's mu, PPO's epochs); the first uses ratio 1")
	fs.Float64Var(&c.LR, "lr", c.LR, "peak learning rate")
	fs.Float64Var(&c.MinLR, "min-lr", c.MinLR, "learning rate at the end of the cosine decay (equal to --lr: constant)")
	fs.IntVar(&c.Warmup, "warmup", c.Warmup, "steps of linear learning-rate warmup")
	fs.Float64Var(&c.WeightDecay, "weight-decay", c.WeightDecay, "AdamW weight decay")
	fs.Float64Var(&c.MaxGradNorm, "clip", c.MaxGradNorm, "clip the global gradient norm to this (0: off)")
	fs.IntVar(&c.RefSyncEvery, "ref-sync-every", c.RefSyncEvery, "move the reference model toward the policy every this many steps (0: never)")
	fs.Float64Var(&c.RefMixAlpha, "ref-mix-alpha", c.RefMixAlpha, "reference sync blend: ref = alpha*policy + (1-alpha)*ref (1: copy; small alpha with --ref-sync-every 1: an EMA)")
	fs.IntVar(&c.MicroBatch, "micro-batch", c.MicroBatch, "most rows per forward pass (0: the whole batch at once)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "sampling seed (with --data-seed, fixes the run on the CPU)")
	fs.BoolVar(&c.KLMetrics, "kl-metrics", c.KLMetrics, "keep a reference model for the KL diagnostics even when no loss term uses it")
}

// rlRun is the shared skeleton of the sft, grpo and ppo commands.
type rlRun struct {
	common       *commonFlags
	tasks        taskFlags
	init         string
	runDir       string
	opts         runOptions
	log, metrics zerolog.Logger
	closeMetrics func(failed bool)
	metricsOut   *metricsWriter
	completions  *completionLog
	held         *heldRun // the run directory, owned for the run's life
	overwrite    bool
	reportTo     []string
	be           tensor.Backend
	evalTemp     float64 // temperature of the sampled accuracy
	family       *modelFamily
	setup        *taskSetup
	// resumed is the run being continued (--resume), nil for a new run.
	resumed *resumedRun
	lora    loraFlags
	// presetType, when set, names the model_type of the Llama-family model a command makes
	// without --init (sft --preset).
	presetType func() string
	// cluster is this process's place in a data-parallel sft job (nil: one process).
	cluster *cluster
}

// runOptions are the run-loop options of sft, grpo and ppo, saved in config.json. They do not
// change a run's numbers, so a resumed run may set them afresh.
type runOptions struct {
	// EvalEvery measures held-out accuracy every this many steps (0: before and after only).
	EvalEvery int `json:"eval_every"`
	// SaveEvery writes the checkpoint (with the optimizer state, to continue with --resume)
	// every this many steps; 0 saves only at the end, at --stop-at and on an interrupt.
	SaveEvery int `json:"save_every"`
	// StopAt saves and stops once this many steps are taken, to be continued with --resume; 0
	// runs to the end. It is not carried over by a resume.
	StopAt int `json:"stop_at,omitempty"`
	// Resume is the run directory (or checkpoint) this invocation continued, if any.
	Resume string `json:"resume,omitempty"`
	// LogCompletions writes this many sampled completions a step, with their rewards, to
	// completions.jsonl (grpo and ppo).
	LogCompletions int `json:"log_completions,omitempty"`
}

func addRunFlags(fs *pflag.FlagSet, r *rlRun, initHelp string) {
	fs.StringVar(&r.init, "init", "", initHelp)
	fs.StringVar(&r.runDir, "run-dir", "", "where to write config.json, metrics.jsonl and the checkpoint (default: runs/<command>-<task>-<time>; with --resume: the resumed run's directory)")
	fs.IntVar(&r.opts.EvalEvery, "eval-every", 0, "also measure held-out accuracy every this many steps (0: only before and after)")
	fs.IntVar(&r.opts.SaveEvery, "save-every", 100, "write the checkpoint, with optimizer state to continue from, every this many steps (0: only at the end, at --stop-at and on Ctrl-C)")
	fs.IntVar(&r.opts.StopAt, "stop-at", 0, "save and stop once this many steps are taken, to be continued later with --resume (0: run to --steps)")
	fs.StringSliceVar(&r.reportTo, "report-to", []string{"jsonl", "tensorboard"}, "records to keep beside metrics.jsonl (always written): tensorboard (event files for TensorBoard), or none")
	fs.BoolVar(&r.overwrite, "overwrite", false, "replace the run already in --run-dir (default: refuse; continue it with --resume)")
	fs.StringVar(&r.opts.Resume, "resume", "", "continue a run from its directory, bit for bit on the CPU (parameters, optimizer, reference, RNG and prompt position); only --steps and the run-loop flags may change")
	addLoRAFlags(fs, &r.lora)
	fs.IntVar(&r.opts.LogCompletions, "log-completions", 0, "grpo, ppo: write this many sampled completions a step, with their rewards, to completions.jsonl in the run directory")
}

// start opens the backend, tokenizer, tasks, run directory and metrics file. With --resume the
// run's own settings replace the flags first (see loadResume, which spec drives).
func (r *rlRun) start(fs *pflag.FlagSet, command string, spec resumeSpec) error {
	if err := r.joinCluster(command); err != nil {
		return err
	}
	r.log = r.common.logger()
	if r.opts.EvalEvery < 0 || r.opts.SaveEvery < 0 || r.opts.StopAt < 0 || r.opts.LogCompletions < 0 {
		return fmt.Errorf("--eval-every %d, --save-every %d, --stop-at %d, --log-completions %d: want >= 0", r.opts.EvalEvery, r.opts.SaveEvery, r.opts.StopAt, r.opts.LogCompletions)
	}
	if r.opts.Resume != "" {
		var err error
		if r.resumed, err = r.loadResume(fs, command, spec); err != nil {
			return err
		}
	} else {
		r.tasks.inherit(fs, r.init, r.log)
	}
	var err error
	if r.be, err = r.common.backend(r.log); err != nil {
		return err
	}
	if r.family, err = openFamily(r.hfDir(), r.modelType()); err != nil {
		return fmt.Errorf("--init %s: %w", r.init, err)
	}
	if r.setup, err = r.tasks.setup(r.family); err != nil {
		return err
	}
	if r.runDir == "" {
		name := strings.NewReplacer(":", "", ",", "+").Replace(r.tasks.Spec)
		if r.tasks.Data.Path != "" {
			name = strings.TrimSuffix(filepath.Base(r.tasks.Data.Path), filepath.Ext(r.tasks.Data.Path))
		}
		r.runDir = filepath.Join("runs", fmt.Sprintf("%s-%s-%s", command, name, time.Now().Format("20060102-150405")))
	}
	if !r.cluster.main() { // rank 0 writes the run's files
		r.metrics = zerolog.Nop()
		r.closeMetrics = func(bool) { r.setup.close() }
		return nil
	}
	if r.held, err = claimRunDir(r.runDir, r.resumed != nil, r.overwrite); err != nil {
		r.setup.close()
		return err
	}
	metricsPath := filepath.Join(r.runDir, "metrics.jsonl")
	if r.resumed != nil {
		dropped, err := trimMetrics(metricsPath, r.resumed.State.Step)
		if err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		if dropped > 0 {
			r.log.Warn().Int("lines", dropped).Int("step", r.resumed.State.Step).
				Msg("dropped metric lines written after the checkpoint (those steps run again)")
		}
	}
	tensorboard, err := reportTo(r.reportTo)
	if err != nil {
		r.setup.close()
		r.held.release(true)
		return err
	}
	if r.metricsOut, r.metrics, err = openMetricsFile(metricsPath, r.resumed != nil, tensorboard); err != nil {
		r.setup.close()
		r.held.release(true)
		return err
	}
	resumedStep := 0
	if r.resumed != nil {
		resumedStep = r.resumed.State.Step
	}
	if r.completions, err = openCompletionLog(r.runDir, r.opts.LogCompletions, resumedStep, r.resumed != nil); err != nil {
		r.metricsOut.Close()
		r.setup.close()
		r.held.release(true)
		return fmt.Errorf("--log-completions: %w", err)
	}
	r.closeMetrics = func(failed bool) {
		if err := r.metricsOut.Close(); err != nil {
			r.log.Error().Err(err).Msg("metrics")
		}
		if err := r.completions.close(); err != nil {
			r.log.Error().Err(err).Msg("completions")
		}
		r.setup.close()
		r.held.release(failed)
	}
	return nil
}

// hfDir is the Hugging Face directory the run's model and tokenizer come from: --init itself, or
// the directory a run given as --init (or resumed) started from; "" for GPT-2.
func (r *rlRun) hfDir() string {
	if r.resumed != nil {
		return r.resumed.hfDir
	}
	if r.init == "" {
		return ""
	}
	if isHFModelDir(r.init) {
		if abs, err := filepath.Abs(r.init); err == nil {
			return abs
		}
		return r.init
	}
	return hfDirOfRun(r.init)
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
	if err := r.addAdapters(m); err != nil {
		return nil, nil, err
	}
	if m.VocabSize() < r.family.tok.VocabSize() {
		return nil, nil, fmt.Errorf("--init %s: vocabulary of %d is smaller than its tokenizer's %d", r.init, m.VocabSize(), r.family.tok.VocabSize())
	}
	format := "Hugging Face directory"
	if l != nil {
		format = string(l.Format)
	}
	r.log.Info().Str("format", format).Str("path", r.init).Str("model", describePolicy(m)).Msg("initial model")
	return m, l, nil
}

// model returns the model to train: with --resume one of the run's shape (its parameters come
// with the trainer's Restore), else --init's (required or not).
func (r *rlRun) model(required bool) (rl.Policy, *load.Loaded, error) {
	if r.resumed == nil {
		return r.loadInit(required)
	}
	m, err := r.policyOf(r.resumed.Loaded) // the trainer's Restore brings the optimizer and the rest
	return m, nil, err
}

// restore continues tr from the resumed run's checkpoint (nothing without --resume); steps is
// the run's total, which must leave a step to take.
func (r *rlRun) restore(tr checkpointer, steps int) error {
	res := r.resumed
	if res == nil {
		return nil
	}
	if res.stopped != "" {
		return fmt.Errorf("--resume %s: the run ended at step %d (%s); start a new run from it with --init", res.Path, res.State.Step, res.stopped)
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
	if !r.cluster.main() {
		return nil
	}
	meta := rlRunMeta{Command: command, HFDir: r.family.hfDir, Init: r.init, Tasks: r.tasks, Config: raw, Run: &opts, LoRA: r.lora}
	switch p := m.(type) {
	case *rl.GPT2Policy:
		meta.Model = &p.Model.Config
	case *rl.LlamaPolicy:
		meta.Llama = &p.Model.Config
	}
	return writeJSON(filepath.Join(r.runDir, "config.json"), meta)
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
	fmt.Fprintf(stdout, "checkpoint: %s\nmetrics:    %s\n", ckpt, filepath.Join(r.runDir, "metrics.jsonl"))
	if r.cluster.main() {
		fmt.Fprintf(stdout, "curves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", drawRunCurves(r.runDir), r.runDir, r.runDir)
	}
}
