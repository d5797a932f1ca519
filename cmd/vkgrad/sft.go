package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/tokenizer"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// sftFlags configure `vkgrad sft`.
type sftFlags struct {
	rlRun
	cfg    rl.SFTConfig
	preset string
	shape  modelShape
	seed   uint64
	// examples caps the distinct training problems (a fixed labelled set, reshuffled each
	// epoch); 0 draws a fresh problem for every example.
	examples int
	// stopAt ends training once the greedy accuracy on validation problems (from the training
	// split, never the held-out set) reaches it, checked every checkEvery steps; 0 disables.
	stopAt     float64
	checkEvery int
	checkSize  int
}

// modelShape overrides a preset's dimensions.
type modelShape struct {
	Layers, Heads, Channels, Context int
}

// defaultSFTConfig is tuned so the default run teaches the default addition task to about half
// accuracy in a few minutes on two cores, leaving room for RL to improve it.
func defaultSFTConfig() rl.SFTConfig {
	c := rl.DefaultSFTConfig()
	c.Steps, c.Batch, c.LR, c.MinLR, c.Warmup = 1500, 32, 3e-3, 3e-4, 30
	return c
}

func init() {
	register("sft", "supervised warm-up on a built-in task's generated examples (the start of RL fine-tuning)", func(fs *pflag.FlagSet) func([]string) error {
		f := &sftFlags{cfg: defaultSFTConfig(), preset: "gpt2-micro", seed: 1, stopAt: 0.6, checkEvery: 25, checkSize: 200}
		f.evalTemp = 1
		f.common = addCommonFlags(fs)
		f.tasks = defaultTaskFlags()
		addTaskFlags(fs, &f.tasks)
		addRunFlags(fs, &f.rlRun, "start from this model (checkpoint or run directory) instead of a new one")
		fs.StringVar(&f.preset, "preset", f.preset, "shape of a new model: "+strings.Join(gpt2.PresetNames(), ", "))
		fs.IntVar(&f.shape.Layers, "layers", 0, "override the preset's number of layers (0: keep)")
		fs.IntVar(&f.shape.Heads, "heads", 0, "override the preset's attention heads (0: keep)")
		fs.IntVar(&f.shape.Channels, "channels", 0, "override the preset's channels (0: keep)")
		fs.IntVar(&f.shape.Context, "context", 0, "override the preset's context length (0: keep)")
		fs.Uint64Var(&f.seed, "seed", f.seed, "seed of a new model's initialisation")
		fs.IntVar(&f.examples, "examples", f.examples, "train on this many distinct problems, reshuffled each epoch (0: a fresh problem every time)")
		fs.Float64Var(&f.stopAt, "stop-at-accuracy", f.stopAt, "stop once the greedy accuracy on validation problems of the training split reaches this (0: run all steps); leaves room for RL to show its gain")
		fs.IntVar(&f.checkEvery, "check-every", f.checkEvery, "steps between the --stop-at-accuracy checks")
		fs.IntVar(&f.checkSize, "check-size", f.checkSize, "validation problems per --stop-at-accuracy check")
		fs.IntVar(&f.cfg.Steps, "steps", f.cfg.Steps, "optimizer steps")
		fs.IntVar(&f.cfg.Batch, "batch", f.cfg.Batch, "examples per step")
		fs.Float64Var(&f.cfg.LR, "lr", f.cfg.LR, "peak learning rate")
		fs.Float64Var(&f.cfg.MinLR, "min-lr", f.cfg.MinLR, "learning rate at the end of the cosine decay")
		fs.IntVar(&f.cfg.Warmup, "warmup", f.cfg.Warmup, "steps of linear learning-rate warmup")
		fs.Float64Var(&f.cfg.WeightDecay, "weight-decay", f.cfg.WeightDecay, "AdamW weight decay")
		fs.Float64Var(&f.cfg.MaxGradNorm, "clip", f.cfg.MaxGradNorm, "clip the global gradient norm to this (0: off)")
		fs.BoolVar(&f.cfg.AnswerOnly, "answer-only", f.cfg.AnswerOnly, "put the loss on the answer tokens and EOS only (--answer-only=false: also the prompt)")
		return func(args []string) error { return f.run(fs, args) }
	})
}

func (f *sftFlags) run(fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("sft takes no arguments, got %q", args)
	}
	if err := f.start(fs, "sft"); err != nil {
		return err
	}
	defer f.closeMetrics()
	m, _, err := f.loadInit(false)
	if err != nil {
		return err
	}
	if m == nil {
		if m, err = f.newModel(); err != nil {
			return err
		}
	}
	src := f.setup.train
	if f.examples < 0 {
		return fmt.Errorf("--examples %d: want >= 0", f.examples)
	}
	if f.examples > 0 {
		if src, err = fixedSet(src, f.examples, f.tasks.DataSeed); err != nil {
			return fmt.Errorf("--examples: %w", err)
		}
	}
	tr, err := rl.NewSFTTrainer(m, f.tok, src, f.cfg)
	if err != nil {
		return err
	}
	var check []rl.Prompt
	if f.stopAt < 0 || f.stopAt > 1 || f.checkEvery < 1 || f.checkSize < 1 {
		return fmt.Errorf("--stop-at-accuracy %v, --check-every %d, --check-size %d: want a value in [0, 1] and positive counts", f.stopAt, f.checkEvery, f.checkSize)
	}
	if f.stopAt > 0 {
		if check, err = validationSet(f.setup, f.checkSize, f.tasks.DataSeed); err != nil {
			return fmt.Errorf("--stop-at-accuracy: %w", err)
		}
	}
	if err := f.writeConfig("sft", m, f.cfg); err != nil {
		return err
	}
	f.log.Info().Str("model", m.Config.String()).Str("params", humanCount(m.Config.NumParams())).Str("task", f.tasks.Spec).
		Str("run_dir", f.runDir).Msg("supervised training")
	start := time.Now()
	before, err := f.setup.evaluate(m, &f.tasks, f.tok, f.evalTemp)
	if err != nil {
		return err
	}
	logEval(f.log, f.metrics, 0, "before", before)
	bar := progress.New(os.Stderr, f.cfg.Steps)
	for tr.Step < f.cfg.Steps {
		s, err := tr.TrainStep()
		if err != nil {
			bar.Clear()
			return err
		}
		f.metrics.Log().Str("kind", "sft").Int("step", s.Step).Float64("loss", s.Loss).Float64("lr", s.LR).
			Float64("grad_norm", s.GradNorm).Int("loss_tokens", s.Tokens).Float64("step_seconds", s.Seconds).Msg("")
		bar.Update(s.Step, fmt.Sprintf("loss %.3f", s.Loss))
		if len(check) > 0 && s.Step%f.checkEvery == 0 && s.Step < f.cfg.Steps {
			r, err := rl.Evaluate(m, f.tok, check, f.setup.reward, rl.EvalConfig{MaxNewTokens: f.tasks.EvalMax, EOS: int(tokenizer.EOT), Success: 1})
			if err != nil {
				return err
			}
			f.metrics.Log().Str("kind", "sft_check").Int("step", s.Step).Float64("validation_accuracy", r.Accuracy).Msg("")
			if r.Accuracy >= f.stopAt {
				bar.Clear()
				f.log.Info().Int("step", s.Step).Float64("validation_accuracy", r.Accuracy).Float64("stop_at", f.stopAt).
					Msg("validation accuracy reached --stop-at-accuracy; stopping")
				break
			}
		}
		if f.evalEvery > 0 && s.Step%f.evalEvery == 0 && s.Step < f.cfg.Steps {
			r, err := f.setup.evaluate(m, &f.tasks, f.tok, f.evalTemp)
			if err != nil {
				return err
			}
			bar.Clear()
			logEval(f.log, f.metrics, s.Step, "during", r)
		}
	}
	bar.Clear()
	after, err := f.setup.evaluate(m, &f.tasks, f.tok, f.evalTemp)
	if err != nil {
		return err
	}
	logEval(f.log, f.metrics, tr.Step, "after", after)
	ckpt, err := f.save(m, tr.Step, f.cfg, nil)
	if err != nil {
		return err
	}
	f.finish(before, after, time.Since(start), ckpt)
	fmt.Fprintf(os.Stdout, "next: vkgrad grpo --init %s   (or vkgrad ppo --init %s)\n", f.runDir, f.runDir)
	return nil
}

// validationSet draws up to n distinct problems of the training split per task (fewer when the
// split is small), from a stream seeded apart from the training stream's.
func validationSet(s *taskSetup, n int, seed uint64) ([]rl.Prompt, error) {
	var out []rl.Prompt
	for _, t := range s.mix.Tasks {
		g, err := tasks.NewGenerator(t, tasks.Train, seed^0x5eed5eed5eed)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for try := 0; len(seen) < n && try < 20*n; try++ {
			p, err := g.Next()
			if err != nil {
				return nil, err
			}
			if seen[p.Text] {
				continue
			}
			seen[p.Text] = true
			rp, err := p.RL(s.enc)
			if err != nil {
				return nil, err
			}
			out = append(out, rp)
		}
	}
	return out, nil
}

func (f *sftFlags) newModel() (*gpt2.Model, error) {
	cfg, err := gpt2.Preset(f.preset)
	if err != nil {
		return nil, fmt.Errorf("--preset: %w", err)
	}
	for _, o := range []struct {
		name string
		v    int
		dst  *int
	}{{"layers", f.shape.Layers, &cfg.NumLayers}, {"heads", f.shape.Heads, &cfg.NumHeads}, {"channels", f.shape.Channels, &cfg.Channels}, {"context", f.shape.Context, &cfg.MaxSeqLen}} {
		if o.v < 0 {
			return nil, fmt.Errorf("--%s %d: want >= 0", o.name, o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model shape: %w", err)
	}
	if cfg.VocabSize < f.tok.VocabSize() {
		return nil, fmt.Errorf("--preset %s: vocabulary of %d is smaller than GPT-2's %d (the tasks use GPT-2 tokens)", f.preset, cfg.VocabSize, f.tok.VocabSize())
	}
	m, err := gpt2.New(f.be, cfg)
	if err != nil {
		return nil, err
	}
	return m, m.InitRandom(f.seed)
}

// fixedSet draws n distinct problems (by prompt text) from src and cycles over them, in a
// fresh order each epoch.
func fixedSet(src rl.PromptSource, n int, seed uint64) (rl.PromptSource, error) {
	seen := map[string]bool{}
	var set []rl.Prompt
	for tries := 0; len(set) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("found only %d distinct training problems, want %d", len(set), n)
		}
		p, err := src.Next()
		if err != nil {
			return nil, err
		}
		if !seen[p.Text] {
			seen[p.Text] = true
			set = append(set, p)
		}
	}
	r := rng.New(seed)
	order := r.Perm(n)
	pos := 0
	return rl.PromptFunc(func() (rl.Prompt, error) {
		if pos == n {
			r.Shuffle(order)
			pos = 0
		}
		pos++
		return set[order[pos-1]], nil
	}), nil
}
