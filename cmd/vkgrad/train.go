package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/sample"
)

// trainFlags are train's flags: the common ones, and the run's settings.
type trainFlags struct {
	common *commonFlags
	cfg    trainrun.Config
}

// trainCommand is `vkgrad train`.
func trainCommand() command {
	return command{name: "train", summary: "train a GPT-2 or Llama-family language model on text (with no flags: a small GPT-2 on the Go standard library sources)", setup: func(fs *pflag.FlagSet) func([]string) error {
		return newTrainFlags(fs).run
	}}
}

// newTrainFlags registers train's flags on fs, trainrun.DefaultConfig's values their defaults.
func newTrainFlags(fs *pflag.FlagSet) *trainFlags {
	f := &trainFlags{common: addCommonFlags(fs), cfg: trainrun.DefaultConfig()}
	f.cfg.Given = fs.Changed
	fs.StringVar(&f.cfg.Data.Path, "data", f.cfg.Data.Path, "training text: a file, a folder, or an llm.c token file (default: the Go standard library sources of the running Go)")
	fs.StringSliceVar(&f.cfg.Data.Ext, "ext", f.cfg.Data.Ext, "with a folder, read only files with these extensions, e.g. .txt,.md (default: all; .go for the default corpus)")
	fs.Int64Var(&f.cfg.Data.MaxBytes, "max-bytes", f.cfg.Data.MaxBytes, "read at most this many bytes of text (0: all; 16 MiB for the default corpus)")
	fs.StringVar(&f.cfg.Preset, "preset", f.cfg.Preset, "model shape for a new model: "+strings.Join(append(gpt2.PresetNames(), llama.PresetNames()...), ", "))
	fs.StringVar(&f.cfg.Init, "init", f.cfg.Init, "start from this model (vkgrad or llm.c checkpoint, Hugging Face GPT-2 model.safetensors, a Llama/Qwen Hugging Face directory, or a run directory) instead of a random one")
	fs.StringVar(&f.cfg.Resume, "resume", "", "continue an interrupted run from its directory (same data, optimizer state and position)")
	fs.StringVar(&f.cfg.RunDir, "run-dir", "", "where to write the checkpoint, metrics and config (default: runs/<preset>-<time>)")
	fs.IntVar(&f.cfg.Train.Batch, "batch", f.cfg.Train.Batch, "sequences per micro-batch (per step without --micro-batches)")
	fs.IntVar(&f.cfg.Train.MicroBatches, "micro-batches", f.cfg.Train.MicroBatches, "micro-batches per step, gradients added in order (accumulation; under MPI spread over the ranks, the same numbers for any rank count)")
	fs.IntVar(&f.cfg.Train.Seq, "seq", f.cfg.Train.Seq, "tokens per sequence")
	fs.IntVar(&f.cfg.Train.Steps, "steps", f.cfg.Train.Steps, "optimizer steps in total")
	addOptimizerFlags(fs, &f.cfg.Train.Settings)
	fs.BoolVar(&f.cfg.Train.DecayMatricesOnly, "decay-matrices-only", f.cfg.Train.DecayMatricesOnly, "exempt biases and norm weights from weight decay, as nanoGPT does")
	fs.Uint64Var(&f.cfg.Train.Seed, "seed", f.cfg.Train.Seed, "seed for initialisation and data order")
	fs.BoolVar(&f.cfg.Train.NoShuffle, "no-shuffle", f.cfg.Train.NoShuffle, "read training sequences in corpus order")
	fs.Float64Var(&f.cfg.Train.ValFraction, "val-fraction", f.cfg.Train.ValFraction, "share of the tokens held out for validation")
	fs.IntVar(&f.cfg.Train.ValBatches, "val-batches", f.cfg.Train.ValBatches, "batches per validation (0: the whole split)")
	fs.IntVar(&f.cfg.Loop.ValEvery, "val-every", f.cfg.Loop.ValEvery, "validate every this many steps (0: only at start and end)")
	fs.IntVar(&f.cfg.Loop.SaveEvery, "save-every", f.cfg.Loop.SaveEvery, "write the checkpoint every this many steps (0: only at the end)")
	fs.IntVar(&f.cfg.StopAt, "stop-at", 0, "save and stop at this step, to be continued later with --resume (0: run to --steps)")
	fs.IntVar(&f.cfg.Loop.SampleTokens, "sample-tokens", f.cfg.Loop.SampleTokens, "tokens to sample at the end (0: none)")
	fs.StringVar(&f.cfg.Loop.SamplePrompt, "sample-prompt", f.cfg.Loop.SamplePrompt, "prompt for the final sample (default: the start of a new document)")
	fs.StringVar(&f.cfg.Train.OnNonFinite, "on-nonfinite", f.cfg.Train.OnNonFinite, "a step whose loss or gradient is NaN or Inf: skip it (weights untouched; the run stops after --max-skips in a row) or stop")
	fs.IntVar(&f.cfg.Train.MaxSkips, "max-skips", f.cfg.Train.MaxSkips, "with --on-nonfinite skip, stop after this many non-finite steps in a row")
	fs.StringVar(&f.cfg.Train.Precision, "precision", f.cfg.Train.Precision, precision.Help)
	fs.BoolVar(&f.cfg.Train.Recompute, "recompute", f.cfg.Train.Recompute, recomputeHelp+" (--resume keeps the run's choice unless given)")
	fs.BoolVar(&f.cfg.Overwrite, "overwrite", false, "replace the run already in --run-dir (default: refuse; continue it with --resume)")
	fs.StringVar(&f.cfg.CacheDir, "cache-dir", "", "where tokenised corpora are cached (default: the user cache directory's vkgrad folder)")
	fs.StringSliceVar(&f.cfg.ReportTo, "report-to", []string{"jsonl", "tensorboard"}, "records to keep beside metrics.jsonl (always written): tensorboard (event files for TensorBoard), or none")
	fs.BoolVar(&f.cfg.DryRun, "dry-run", false, "print the memory the run needs (parameters, gradients, AdamW, activations) against what is available, and exit")
	f.common.addDistributedFlag(fs)
	return f
}

// run checks the flags, joins the MPI job when launched under one and runs.
func (f *trainFlags) run(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("train takes no arguments, got %q", args)
	}
	if err := f.cfg.Check(); err != nil {
		return err
	}
	cl, err := f.common.joinCluster()
	if err != nil {
		return err
	}
	if !cl.Main() {
		f.common.quiet = true // rank 0 speaks for the job
	}
	log := f.common.logger()
	if cl != nil {
		log.Info().Msg(cl.Describe())
	}
	return trainrun.Run(f.cfg, trainrun.Env{Device: f.common.device, Threads: f.common.threads, Log: log, Cluster: cl, Out: stdout, OnStep: testStepHook, Generate: generateSample})
}

// generateSample is one sample of m, as the end of a run shows it.
func generateSample(m *gpt2.Model, runDir, prompt string, n int, opt sample.Options, seed uint64) (string, error) {
	gen, err := generateText(m, runDir, prompt, n, 1, opt, seed)
	if err != nil {
		return "", err
	}
	return gen.texts[0], nil
}

// recomputeHelp describes --recompute.
const recomputeHelp = "keep one layer's norm outputs and GELU (or SwiGLU) output instead of every layer's and recompute them in the backward: less activation memory, the same numbers, a little more compute"
