package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/fingerprint"
	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
)

type trainFlags struct {
	common         *commonFlags
	cfg            train.Config
	data           trainrun.Data
	preset, init   string
	hfDir          string // a resumed Llama-family run's tokenizer directory
	runDir, resume string
	loopOpts       trainRun
	stopAt         int
	fs             *pflag.FlagSet
	cluster        *cluster.Member // nil: one process
	dryRun         bool
	overwrite      bool
	cacheDir       string
	reportTo       []string
	held           *rundir.Held          // the run directory, owned for the run's life
	metricsOut     *rundir.MetricsWriter // nil on ranks other than 0
}

// trainCommand is `vkgrad train`.
func trainCommand() command {
	return command{name: "train", summary: "train a GPT-2 or Llama-family language model on text (with no flags: a small GPT-2 on the Go standard library sources)", setup: func(fs *pflag.FlagSet) func([]string) error {
		f := newTrainFlags(fs)
		f.addFlags(fs)
		f.common.addDistributedFlag(fs)
		return f.run
	}}
}

// trainRun are the run-loop settings: saved with the run and carried over by --resume, but
// free to change there since they do not change the numbers.
type trainRun struct {
	ValEvery     int    `json:"val_every"`
	SaveEvery    int    `json:"save_every"`
	SampleTokens int    `json:"sample_tokens"`
	SamplePrompt string `json:"sample_prompt,omitempty"`
}

func newTrainFlags(fs *pflag.FlagSet) *trainFlags {
	cfg := train.DefaultConfig()
	cfg.MicroBatches, cfg.OnNonFinite, cfg.MaxSkips, cfg.Precision = 1, "skip", train.DefaultMaxSkips, "fp32"
	return &trainFlags{common: addCommonFlags(fs), cfg: cfg, fs: fs, preset: "gpt2-mini",
		loopOpts: trainRun{ValEvery: 100, SaveEvery: 100, SampleTokens: 96}}
}

// addFlags registers the flags with f's values as defaults.
func (f *trainFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.data.Path, "data", f.data.Path, "training text: a file, a folder, or an llm.c token file (default: the Go standard library sources of the running Go)")
	fs.StringSliceVar(&f.data.Ext, "ext", f.data.Ext, "with a folder, read only files with these extensions, e.g. .txt,.md (default: all; .go for the default corpus)")
	fs.Int64Var(&f.data.MaxBytes, "max-bytes", f.data.MaxBytes, "read at most this many bytes of text (0: all; 16 MiB for the default corpus)")
	fs.StringVar(&f.preset, "preset", f.preset, "model shape for a new model: "+strings.Join(append(gpt2.PresetNames(), llama.PresetNames()...), ", "))
	fs.StringVar(&f.init, "init", f.init, "start from this model (vkgrad or llm.c checkpoint, Hugging Face GPT-2 model.safetensors, a Llama/Qwen Hugging Face directory, or a run directory) instead of a random one")
	fs.StringVar(&f.resume, "resume", "", "continue an interrupted run from its directory (same data, optimizer state and position)")
	fs.StringVar(&f.runDir, "run-dir", "", "where to write the checkpoint, metrics and config (default: runs/<preset>-<time>)")
	fs.IntVar(&f.cfg.Batch, "batch", f.cfg.Batch, "sequences per micro-batch (per step without --micro-batches)")
	fs.IntVar(&f.cfg.MicroBatches, "micro-batches", f.cfg.MicroBatches, "micro-batches per step, gradients added in order (accumulation; under MPI spread over the ranks, the same numbers for any rank count)")
	fs.IntVar(&f.cfg.Seq, "seq", f.cfg.Seq, "tokens per sequence")
	fs.IntVar(&f.cfg.Steps, "steps", f.cfg.Steps, "optimizer steps in total")
	addOptimizerFlags(fs, &f.cfg.Settings)
	fs.BoolVar(&f.cfg.DecayMatricesOnly, "decay-matrices-only", f.cfg.DecayMatricesOnly, "exempt biases and norm weights from weight decay, as nanoGPT does")
	fs.Uint64Var(&f.cfg.Seed, "seed", f.cfg.Seed, "seed for initialisation and data order")
	fs.BoolVar(&f.cfg.NoShuffle, "no-shuffle", f.cfg.NoShuffle, "read training sequences in corpus order")
	fs.Float64Var(&f.cfg.ValFraction, "val-fraction", f.cfg.ValFraction, "share of the tokens held out for validation")
	fs.IntVar(&f.cfg.ValBatches, "val-batches", f.cfg.ValBatches, "batches per validation (0: the whole split)")
	fs.IntVar(&f.loopOpts.ValEvery, "val-every", f.loopOpts.ValEvery, "validate every this many steps (0: only at start and end)")
	fs.IntVar(&f.loopOpts.SaveEvery, "save-every", f.loopOpts.SaveEvery, "write the checkpoint every this many steps (0: only at the end)")
	fs.IntVar(&f.stopAt, "stop-at", 0, "save and stop at this step, to be continued later with --resume (0: run to --steps)")
	fs.IntVar(&f.loopOpts.SampleTokens, "sample-tokens", f.loopOpts.SampleTokens, "tokens to sample at the end (0: none)")
	fs.StringVar(&f.loopOpts.SamplePrompt, "sample-prompt", f.loopOpts.SamplePrompt, "prompt for the final sample (default: the start of a new document)")
	fs.StringVar(&f.cfg.OnNonFinite, "on-nonfinite", f.cfg.OnNonFinite, "a step whose loss or gradient is NaN or Inf: skip it (weights untouched; the run stops after --max-skips in a row) or stop")
	fs.IntVar(&f.cfg.MaxSkips, "max-skips", f.cfg.MaxSkips, "with --on-nonfinite skip, stop after this many non-finite steps in a row")
	fs.StringVar(&f.cfg.Precision, "precision", f.cfg.Precision, precisionHelp)
	fs.BoolVar(&f.cfg.Recompute, "recompute", f.cfg.Recompute, recomputeHelp+" (--resume keeps the run's choice unless given)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace the run already in --run-dir (default: refuse; continue it with --resume)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where tokenised corpora are cached (default: the user cache directory's vkgrad folder)")
	fs.StringSliceVar(&f.reportTo, "report-to", []string{"jsonl", "tensorboard"}, "records to keep beside metrics.jsonl (always written): tensorboard (event files for TensorBoard), or none")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the memory the run needs (parameters, gradients, AdamW, activations) against what is available, and exit")
}

// runMeta is written as config.json in the run directory.
type runMeta struct {
	Model gpt2.Config `json:"model"`
	// Llama is set, and Model unused, for a Llama-family model; HFDir is the Hugging Face
	// directory its tokenizer comes from ("" for GPT-2's).
	Llama *llama.Config `json:"llama,omitempty"`
	HFDir string        `json:"hf_dir,omitempty"`
	Train train.Config  `json:"train"`
	Data  trainrun.Data `json:"data"`
	Init  string        `json:"init,omitempty"`
	Run   *trainRun     `json:"run,omitempty"` // absent in runs saved before it was
}

func (f *trainFlags) run(args []string) (err error) {
	defer func() { f.held.Release(err != nil) }()
	if err := f.check(args); err != nil {
		return err
	}
	cl, err := f.common.joinCluster()
	if err != nil {
		return err
	}
	f.cluster = cl
	if !cl.Main() {
		f.common.quiet = true // rank 0 speaks for the job
	}
	log := f.common.logger()
	if cl != nil {
		log.Info().Msg(cl.Describe())
	}
	be, err := f.common.backend(log)
	if err != nil {
		return err
	}
	var resumed *load.Loaded
	if f.resume != "" {
		if resumed, err = f.loadResume(); err != nil {
			return err
		}
	}
	if _, err := setPrecision(be, f.cfg.Precision); err != nil {
		return err
	}
	m, name, err := f.modelChoice(log).Choose(be, resumed)
	if errors.Is(err, trainrun.ErrDryRun) {
		return nil
	}
	if err != nil {
		return err
	}
	f.preset = name
	if err := f.checkSampling(m, log); err != nil {
		return err
	}
	tr, source, err := f.trainer(m, resumed, log)
	if err != nil {
		return err
	}
	if !cl.Main() {
		return f.loop(tr, log, zerolog.Nop())
	}
	metrics, err := f.openRun(m, tr, source, resumed != nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.metricsOut.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("metrics: %w", cerr)
		}
	}()
	log.Info().Str("model", m.Describe()).Str("params", logfmt.Count(m.NumParams())).
		Int("train_batches_per_epoch", tr.Train.BatchesPerEpoch()).Str("run_dir", f.runDir).Msg("training")
	return f.loop(tr, log, metrics)
}

// check refuses bad flags before anything is allocated or written, and makes the paths
// absolute, so the run's data is found from any working directory.
func (f *trainFlags) check(args []string) (err error) {
	if len(args) > 0 {
		return fmt.Errorf("train takes no arguments, got %q", args)
	}
	if f.loopOpts.ValEvery < 0 || f.loopOpts.SaveEvery < 0 || f.loopOpts.SampleTokens < 0 || f.stopAt < 0 {
		return fmt.Errorf("--val-every, --save-every, --stop-at and --sample-tokens must be >= 0")
	}
	if err := f.cfg.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	for _, p := range []*string{&f.data.Path, &f.init} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSampling checks the end-of-run sample's prompt (a GPT-2's; a Llama-family run samples
// through vkgrad sample instead).
func (f *trainFlags) checkSampling(m trainrun.Model, log zerolog.Logger) error {
	if m.GPT2 == nil {
		if f.loopOpts.SampleTokens > 0 {
			log.Info().Msg("no sample at the end of a Llama-family run: export it and use vkgrad sample --model")
			f.loopOpts.SampleTokens = 0
		}
		return nil
	}
	return checkSamplePrompt(f.loopOpts, m.GPT2.Config)
}

// trainer claims the run directory (rank 0), reads the data (rank 0 tokenising into the cache
// first) and builds the trainer, joined to the ranks and resumed when asked.
func (f *trainFlags) trainer(m trainrun.Model, resumed *load.Loaded, log zerolog.Logger) (tr *train.Trainer, source string, err error) {
	cl := f.cluster
	if err := cl.CheckSpread(fmt.Sprintf("--micro-batches %d", f.cfg.MicroBatches), max(1, f.cfg.MicroBatches)); err != nil {
		return nil, "", err
	}
	if f.runDir == "" {
		f.runDir = rundir.Default(f.preset, time.Now())
	}
	if cl.Main() {
		if f.held, err = rundir.Claim(f.runDir, resumed != nil, f.overwrite); err != nil {
			return nil, "", err
		}
	} else if err := cl.Barrier(); err != nil {
		return nil, "", err
	}
	tokens, source, err := f.loadData(m.Tok, log)
	if err != nil {
		return nil, "", err
	}
	if cl.Main() {
		if err := cl.Barrier(); err != nil {
			return nil, "", err
		}
	}
	if tr, err = m.NewTrainer(f.cfg, tokens, source); err != nil {
		return nil, "", err
	}
	if cl != nil {
		if err := tr.SetComm(cl.Comm()); err != nil {
			return nil, "", err
		}
	}
	if resumed != nil {
		if err := tr.Restore(resumed.State, resumed.Path); err != nil {
			return nil, "", err
		}
		log.Info().Int("step", tr.Step).Str("from", resumed.Path).Msg("resumed")
	}
	return tr, source, nil
}

// openRun writes the run's config.json and opens its metrics (dropping, on a resume, the lines
// of steps taken after the checkpoint).
func (f *trainFlags) openRun(m trainrun.Model, tr *train.Trainer, source string, resumed bool) (zerolog.Logger, error) {
	meta := runMeta{Train: f.cfg, Data: f.data, Init: f.init, Run: &f.loopOpts, HFDir: m.HFDir}
	if m.Llama != nil {
		meta.Llama = &m.Llama.Config
	} else {
		meta.Model = m.GPT2.Config
	}
	var err error
	if meta.Data.Fingerprint, err = fingerprint.Data(source); err != nil {
		return zerolog.Nop(), fmt.Errorf("--data: %w", err)
	}
	if err := rundir.WriteConfig(f.runDir, meta); err != nil {
		return zerolog.Nop(), err
	}
	tensorboard, err := rundir.ReportTo(f.reportTo)
	if err != nil {
		return zerolog.Nop(), err
	}
	if f.metricsOut, _, err = rundir.OpenMetrics(f.runDir, resumed, tr.Step, tensorboard); err != nil {
		return zerolog.Nop(), err
	}
	return f.metricsOut.Logger(), nil
}

// resumeFixed are the flags that decide a run's numbers: a resumed run keeps its own, and a
// different value given again is refused, naming the saved one.
var resumeFixed = []string{"data", "ext", "max-bytes", "preset", "init", "batch", "micro-batches", "seq", "lr", "min-lr", "warmup",
	"weight-decay", "decay-matrices-only", "clip", "seed", "no-shuffle", "val-fraction", "val-batches", "on-nonfinite", "max-skips", "precision"}

func (f *trainFlags) loadResume() (*load.Loaded, error) {
	rundir.RestoreReplacedAt(f.resume)
	l, err := load.Read(f.resume)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	if l.State == nil || l.State.AdamM == nil {
		return nil, fmt.Errorf("--resume %s: %s is a %s without optimizer state; use --init to start a new run from it", f.resume, l.Path, l.Format)
	}
	saved, ok, err := train.SavedConfig(l.State)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", l.Path, err)
	}
	if !ok {
		return nil, fmt.Errorf("--resume %s: checkpoint holds no training configuration", l.Path)
	}
	cfgPath := filepath.Join(filepath.Dir(l.Path), rundir.Config)
	raw, err := rundir.ReadConfig(filepath.Dir(l.Path))
	if err != nil {
		return nil, fmt.Errorf("--resume: reading the run's config.json: %w", err)
	}
	var meta runMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", cfgPath, err)
	}
	if err := f.adoptSaved(saved, meta, l.State.Step); err != nil {
		return nil, fmt.Errorf("--resume %s: %w", f.resume, err)
	}
	f.hfDir = meta.HFDir
	if f.runDir == "" {
		f.runDir = filepath.Dir(l.Path)
	}
	return l, nil
}

// adoptSaved replaces the flags with the run's saved settings: the fixed ones must be unchanged
// if given again; --steps may grow; the run-loop ones (--val-every, --save-every, ...) are
// carried over unless given.
func (f *trainFlags) adoptSaved(saved train.Config, meta runMeta, step int) error {
	if saved.Precision == "" {
		saved.Precision = "fp32" // runs saved before products had a precision
	}
	was := newTrainFlags(pflag.NewFlagSet("", pflag.ContinueOnError))
	was.cfg, was.data, was.init = saved, meta.Data, meta.Init
	if meta.Run != nil {
		was.loopOpts = *meta.Run
	}
	wfs := pflag.NewFlagSet("", pflag.ContinueOnError)
	was.addFlags(wfs)
	for _, name := range resumeFixed {
		if !f.fs.Changed(name) || name == "preset" {
			continue
		}
		given, kept := f.fs.Lookup(name).Value.String(), wfs.Lookup(name).Value.String()
		if given != kept {
			return fmt.Errorf("--%s %s: this run was saved with --%s %s, which a resumed run keeps", name, given, name, kept)
		}
	}
	steps, recompute := f.cfg.Steps, f.cfg.Recompute
	loop := f.loopOpts
	f.cfg, f.data, f.loopOpts = saved, meta.Data, was.loopOpts
	if f.fs.Changed("recompute") { // it leaves the numbers alone, so a resume may change it
		f.cfg.Recompute = recompute
	}
	if f.fs.Changed("steps") {
		// Extending a run changes its schedule from here on; it no longer matches a straight run.
		if steps < step {
			return fmt.Errorf("--steps %d: the run has already taken %d steps", steps, step)
		}
		f.cfg.Steps = steps
	}
	for name, dst := range map[string]*int{"val-every": &f.loopOpts.ValEvery, "save-every": &f.loopOpts.SaveEvery, "sample-tokens": &f.loopOpts.SampleTokens} {
		if f.fs.Changed(name) {
			*dst = map[string]int{"val-every": loop.ValEvery, "save-every": loop.SaveEvery, "sample-tokens": loop.SampleTokens}[name]
		}
	}
	if f.fs.Changed("sample-prompt") {
		f.loopOpts.SamplePrompt = loop.SamplePrompt
	}
	return nil
}

// modelChoice is the model the flags choose, checked against the device's memory.
func (f *trainFlags) modelChoice(log zerolog.Logger) trainrun.ModelChoice {
	return trainrun.ModelChoice{Init: f.init, Preset: f.preset, HFDir: f.hfDir, Seed: f.cfg.Seed, Memory: f.memory(), Log: log}
}

// recomputeHelp describes --recompute.
const recomputeHelp = "keep one layer's norm outputs and GELU (or SwiGLU) output instead of every layer's and recompute them in the backward: less activation memory, the same numbers, a little more compute"

// memory is the run's memory check, as the flags set it.
func (f *trainFlags) memory() trainrun.Memory {
	return trainrun.Memory{Batch: f.cfg.Batch, Seq: f.cfg.Seq, MicroBatches: f.cfg.MicroBatches, Recompute: f.cfg.Recompute,
		Distributed: f.cluster != nil, DryRun: f.dryRun, Out: stdout}
}

func (f *trainFlags) loadData(tok data.LoadOptions, log zerolog.Logger) ([]int32, string, error) {
	dir, err := trainrun.TokenCacheDir(f.cacheDir)
	if err != nil {
		return nil, "", err
	}
	return f.data.Load(dir, tok, log)
}

// checkSamplePrompt refuses, before training, a --sample-prompt the end of the run could not use.
func checkSamplePrompt(o trainRun, cfg gpt2.Config) error {
	if o.SampleTokens == 0 || o.SamplePrompt == "" {
		return nil
	}
	tok, err := tokenizer.GPT2()
	if err != nil {
		return err
	}
	if n := len(tok.Encode(o.SamplePrompt)); n >= cfg.MaxSeqLen {
		return fmt.Errorf("--sample-prompt is %d tokens; the model's context is %d, leaving no room to sample", n, cfg.MaxSeqLen)
	}
	return nil
}
