package trainrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/device"
	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/fingerprint"
	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/plot"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// Env is what a run takes from the command that starts it: the device to open, the log, the
// MPI job and where results go, and the command's sampler, which vkgrad sample shares
// (Generate must be set).
type Env struct {
	// Device and Threads are --device and --threads, the backend device.OpenLogged opens.
	Device  string
	Threads int
	Log     zerolog.Logger
	Cluster *cluster.Member // nil: one process
	Out     io.Writer       // results: the dry run's memory, a paused run's advice, the summary
	// OnStep, when set, is the run loop's hook after each step, given the interrupt context.
	OnStep func(ctx context.Context) func(step int, metrics map[string]float64) error
	// Generate continues prompt (a new document when "") by n tokens of m with opt and seed,
	// returning the prompt and its continuation; runDir names the model in errors.
	Generate func(m *gpt2.Model, runDir, prompt string, n int, opt sample.Options, seed uint64) (string, error)
}

// Run trains the model cfg chooses (resuming cfg.Resume's run when set) to its last step or
// StopAt, writing the run directory on rank 0, and prints the outcome to env.Out; with DryRun
// it prints the run's memory instead. cfg must have passed Check.
func Run(cfg Config, env Env) (err error) {
	r := &run{Config: cfg, Env: env}
	defer func() { r.held.Release(err != nil) }()
	if r.Backend, err = device.OpenLogged(r.Device, r.Threads, r.Log); err != nil {
		return err
	}
	var resumed *load.Loaded
	if r.Resume != "" {
		if resumed, r.hfDir, err = r.LoadResume(); err != nil {
			return err
		}
	}
	if _, err := precision.Set(r.Backend, r.Train.Precision); err != nil { // the run's, once a resume has adopted it
		return err
	}
	m, name, err := r.modelChoice().Choose(r.Backend, resumed)
	if errors.Is(err, ErrDryRun) {
		return nil
	}
	if err != nil {
		return err
	}
	r.Preset = name
	if err := r.checkSampling(m); err != nil {
		return err
	}
	tr, source, err := r.trainer(m, resumed)
	if err != nil {
		return err
	}
	if !r.Cluster.Main() {
		return r.loop(tr, zerolog.Nop())
	}
	metrics, err := r.openRun(m, tr, source, resumed != nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.metricsOut.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("metrics: %w", cerr)
		}
	}()
	r.Log.Info().Str("model", m.Describe()).Str("params", logfmt.Count(m.NumParams())).
		Int("train_batches_per_epoch", tr.Train.BatchesPerEpoch()).Str("run_dir", r.RunDir).Msg("training")
	return r.loop(tr, metrics)
}

// run is a Run under way.
type run struct {
	Config
	Env
	Backend    tensor.Backend
	hfDir      string                // a resumed Llama-family run's tokenizer directory
	held       *rundir.Held          // the run directory, owned for the run's life
	metricsOut *rundir.MetricsWriter // nil on ranks other than 0
}

// modelChoice is the model the settings choose, checked against the device's memory.
func (r *run) modelChoice() ModelChoice {
	return ModelChoice{Init: r.Init, Preset: r.Preset, HFDir: r.hfDir, Seed: r.Train.Seed, Memory: r.memory(), Log: r.Log}
}

// memory is the run's memory check.
func (r *run) memory() Memory {
	return Memory{Batch: r.Train.Batch, Seq: r.Train.Seq, MicroBatches: r.Train.MicroBatches, Recompute: r.Train.Recompute,
		Distributed: r.Cluster != nil, DryRun: r.DryRun, Out: r.Out}
}

// checkSampling checks the end-of-run sample's prompt (a GPT-2's; a Llama-family run samples
// through vkgrad sample instead).
func (r *run) checkSampling(m Model) error {
	g := m.GPT2()
	if g == nil {
		if r.Loop.SampleTokens > 0 {
			r.Log.Info().Msg("no sample at the end of a Llama-family run: export it and use vkgrad sample --model")
			r.Loop.SampleTokens = 0
		}
		return nil
	}
	return checkSamplePrompt(r.Loop, g.Config)
}

// checkSamplePrompt refuses, before training, a --sample-prompt the end of the run could not use.
func checkSamplePrompt(o LoopSettings, cfg gpt2.Config) error {
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

// trainer claims the run directory (rank 0), reads the data (rank 0 tokenising into the cache
// first) and builds the trainer, joined to the ranks and resumed when asked.
func (r *run) trainer(m Model, resumed *load.Loaded) (tr *train.Trainer, source string, err error) {
	cl := r.Cluster
	if err := cl.CheckSpread(fmt.Sprintf("--micro-batches %d", r.Train.MicroBatches), max(1, r.Train.MicroBatches)); err != nil {
		return nil, "", err
	}
	if r.RunDir == "" {
		r.RunDir = rundir.Default(r.Preset, time.Now())
	}
	if cl.Main() {
		if r.held, err = rundir.Claim(r.RunDir, resumed != nil, r.Overwrite); err != nil {
			return nil, "", err
		}
	} else if err := cl.Barrier(); err != nil {
		return nil, "", err
	}
	tokens, source, err := r.loadData(m.Tok)
	if err != nil {
		return nil, "", err
	}
	if cl.Main() {
		if err := cl.Barrier(); err != nil {
			return nil, "", err
		}
	}
	if tr, err = train.New(m.LM, r.Train, tokens, source); err != nil {
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
		r.Log.Info().Int("step", tr.Step).Str("from", resumed.Path).Msg("resumed")
	}
	return tr, source, nil
}

// loadData reads the run's tokens through the token cache.
func (r *run) loadData(tok data.LoadOptions) ([]int32, string, error) {
	dir, err := TokenCacheDir(r.CacheDir)
	if err != nil {
		return nil, "", err
	}
	return r.Data.Load(dir, tok, r.Log)
}

// openRun writes the run's config.json and opens its metrics (dropping, on a resume, the lines
// of steps taken after the checkpoint).
func (r *run) openRun(m Model, tr *train.Trainer, source string, resumed bool) (zerolog.Logger, error) {
	meta := Meta{Train: r.Train, Data: r.Data, Init: r.Init, Run: &r.Loop, HFDir: m.HFDir}
	if l := m.Llama(); l != nil {
		meta.Llama = &l.Config
	} else {
		meta.Model = m.GPT2().Config
	}
	var err error
	if meta.Data.Fingerprint, err = fingerprint.Data(source); err != nil {
		return zerolog.Nop(), fmt.Errorf("--data: %w", err)
	}
	if err := rundir.WriteConfig(r.RunDir, meta); err != nil {
		return zerolog.Nop(), err
	}
	tensorboard, err := rundir.ReportTo(r.ReportTo)
	if err != nil {
		return zerolog.Nop(), err
	}
	if r.metricsOut, _, err = rundir.OpenMetrics(r.RunDir, resumed, tr.Step, tensorboard); err != nil {
		return zerolog.Nop(), err
	}
	return r.metricsOut.Logger(), nil
}

// loop trains to the last step through Loop (validating every ValEvery steps, saving every
// SaveEvery steps, at StopAt and on an interrupt), then says how a paused or interrupted run
// continues, or prints the summary (rank 0).
func (r *run) loop(tr *train.Trainer, metrics zerolog.Logger) error {
	ctx, stop := runloop.InterruptContext()
	defer stop()
	var onStep func(int, map[string]float64) error
	if r.OnStep != nil {
		onStep = r.OnStep(ctx)
	}
	out := io.Writer(os.Stderr)
	if !r.Cluster.Main() {
		out = io.Discard
	}
	l := &Loop{Trainer: tr, Last: r.Train.Steps, RunDir: r.RunDir, Main: r.Cluster.Main(), Distributed: r.Cluster != nil,
		Log: r.Log, Metrics: metrics, MetricsOut: r.metricsOut, Held: r.held,
		ValEvery: r.Loop.ValEvery, SaveEvery: r.Loop.SaveEvery, StopAt: r.StopAt, Progress: out,
		AnyCancelled: r.Cluster.AnyStop, OnStep: onStep}
	res, err := l.Run(ctx)
	var in *runloop.Interrupted
	switch {
	case errors.As(err, &in) && in.SaveErr != nil:
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted, and saving failed: %w", in.SaveErr)}
	case errors.As(err, &in):
		return cluster.AgreedStop{Err: fmt.Errorf("interrupted at step %d; saved %s; continue with: vkgrad train --resume %s", in.Step, l.CheckpointPath(), r.RunDir)}
	case err != nil:
		return err
	case !r.Cluster.Main():
		return nil
	case !res.Finished:
		fmt.Fprintf(r.Out, "stopped at step %d of %d; saved %s; continue with: vkgrad train --resume %s\n", tr.Step, r.Train.Steps, l.CheckpointPath(), r.RunDir)
		return nil
	}
	return r.report(tr, res)
}

// sampling is how the end of a run samples its model.
var sampling = sample.Options{Temperature: 0.8, TopK: 40, TopP: 0.95}

// report logs and prints the validation loss before and after, a sample, and where the run's
// files are.
func (r *run) report(tr *train.Trainer, res Result) error {
	wall := time.Since(res.Start)
	firstVal, finalVal := res.FirstVal, res.FinalVal
	r.Log.Info().Float32("val_loss_start", firstVal).Float32("val_loss_end", finalVal).
		Float32("drop", firstVal-finalVal).Str("wall", wall.Round(time.Second).String()).
		Float64("tok_per_s", logfmt.Rounded(float64(res.Tokens)/wall.Seconds())).Msg("validation loss")
	if tr.Val == nil {
		fmt.Fprintf(r.Out, "trained %d steps in %s (no validation split: --val-fraction 0)\n", tr.Step, wall.Round(time.Second))
	} else {
		fmt.Fprintf(r.Out, "validation loss %.4f -> %.4f (fell by %.4f, %.1f%%) in %s\n", firstVal, finalVal, firstVal-finalVal,
			100*(firstVal-finalVal)/firstVal, wall.Round(time.Second))
	}
	if g, ok := tr.Model.(*nn.GPT2LM); ok && r.Loop.SampleTokens > 0 {
		text, err := r.Generate(g.Model, r.RunDir, r.Loop.SamplePrompt, r.Loop.SampleTokens, sampling, r.Train.Seed)
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		fmt.Fprintf(r.Out, "--- sample ---\n%s\n--------------\n", text)
	}
	fmt.Fprintf(r.Out, "checkpoint: %s\nmetrics:    %s\ncurves:     %s   (vkgrad plot %s; tensorboard --logdir %s)\n", filepath.Join(r.RunDir, rundir.Checkpoint), filepath.Join(r.RunDir, rundir.Metrics), plot.DrawRun(r.RunDir), r.RunDir, r.RunDir)
	return nil
}
