package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
)

// sftFlags configure `vkgrad sft`: its flags set an rlrun.Run and the settings rlrun.Run.SFT
// trains with.
type sftFlags struct {
	rlrun.Run
	common *commonFlags
	cfg    rlrun.SFTSettings
}

// defaultSFTConfig is tuned so the default run teaches the default addition task to about half
// accuracy in a few minutes on two cores, leaving room for RL to improve it.
func defaultSFTConfig() rl.SFTConfig {
	c := rl.DefaultSFTConfig()
	c.Steps, c.Batch, c.LR, c.MinLR, c.Warmup = 1500, 32, 3e-3, 3e-4, 30
	return c
}

func addSFTFlags(fs *pflag.FlagSet, c *rl.SFTConfig, o *rlrun.SFTOptions) {
	fs.StringVar(&o.Preset, "preset", o.Preset, "shape of a new model: "+strings.Join(append(gpt2.PresetNames(), llama.PresetNames()...), ", "))
	fs.IntVar(&o.Shape.Layers, "layers", o.Shape.Layers, "override the preset's number of layers (0: keep)")
	fs.IntVar(&o.Shape.Heads, "heads", o.Shape.Heads, "override the preset's attention heads (0: keep)")
	fs.IntVar(&o.Shape.Channels, "channels", o.Shape.Channels, "override the preset's channels (0: keep)")
	fs.IntVar(&o.Shape.Context, "context", o.Shape.Context, "override the preset's context length (0: keep)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of a new model's initialisation")
	fs.IntVar(&o.Examples, "examples", o.Examples, "train on this many distinct problems, reshuffled each epoch (0: a fresh problem every time)")
	fs.Float64Var(&o.StopAtAccuracy, "stop-at-accuracy", o.StopAtAccuracy, "stop once the greedy accuracy on validation problems of the training split reaches this (0: run all steps); leaves room for RL to show its gain")
	fs.IntVar(&o.CheckEvery, "check-every", o.CheckEvery, "steps between the --stop-at-accuracy checks")
	fs.IntVar(&o.CheckSize, "check-size", o.CheckSize, "validation problems per --stop-at-accuracy check")
	fs.IntVar(&c.Steps, "steps", c.Steps, "optimizer steps")
	fs.IntVar(&c.Batch, "batch", c.Batch, "examples per step")
	fs.IntVar(&c.MicroBatch, "micro-batch", c.MicroBatch, "most examples per forward pass, their gradients added over the step's batch (memory; 0: the whole batch at once)")
	addOptimizerFlags(fs, &c.Settings)
	fs.BoolVar(&c.AnswerOnly, "answer-only", c.AnswerOnly, "put the loss on the answer tokens and EOS only (--answer-only=false: also the prompt)")
	fs.BoolVar(&c.LastTurnOnly, "last-turn-only", c.LastTurnOnly, "a \"messages\" conversation trains its final assistant turn alone, the turns before it the prompt (default: every assistant turn, tool calls included, in the conversation rendered once)")
}

// newSFTFlags are sft's defaults.
func newSFTFlags() *sftFlags {
	return &sftFlags{Run: rlrun.Run{Command: "sft"}, cfg: rlrun.SFTSettings{SFTConfig: defaultSFTConfig(),
		SFTOptions: rlrun.SFTOptions{Preset: "gpt2-micro", Seed: 1, StopAtAccuracy: 0.6, CheckEvery: 25, CheckSize: 200}}}
}

// sftCommand is `vkgrad sft`.
func sftCommand() command {
	return command{name: "sft", summary: "supervised fine-tuning on a built-in task or a --dataset (the start of RL fine-tuning)", setup: func(fs *pflag.FlagSet) func([]string) error {
		f := newSFTFlags()
		f.common = addCommonFlags(fs)
		f.Tasks = rlrun.DefaultTasks()
		addTaskFlags(fs, &f.Tasks)
		addRunFlags(fs, &f.Run, "start from this model (checkpoint or run directory) instead of a new one")
		addSFTFlags(fs, &f.cfg.SFTConfig, &f.cfg.SFTOptions)
		f.common.addDistributedFlag(fs)
		return func(args []string) error { return f.run(fs, args) }
	}}
}

func (f *sftFlags) run(fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("sft takes no arguments, got %q", args)
	}
	if err := prepareRun(&f.Run, f.common, fs, f.resumeSpec()); err != nil {
		return err
	}
	return f.SFT(&f.cfg)
}

// resumeSpec restores sft's own settings from a resumed run's config.json.
func (f *sftFlags) resumeSpec() resumeSpec {
	return resumeSpec{
		decode:    f.cfg.Decode,
		register:  func(fs *pflag.FlagSet) { addSFTFlags(fs, &f.cfg.SFTConfig, &f.cfg.SFTOptions) },
		mayChange: []string{"stop-at-accuracy", "check-every", "check-size"},
	}
}
