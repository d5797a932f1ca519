package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// sftFlags configure `vkgrad sft`.
type sftFlags struct {
	rlrun.Run
	common  *commonFlags
	cfg     rl.SFTConfig
	sftOpts sftOptions
}

// sftOptions are sft's settings beyond rl.SFTConfig, saved with it in config.json.
type sftOptions struct {
	Preset string     `json:"preset"`
	Shape  modelShape `json:"shape"`
	// Seed draws a new model's initialisation.
	Seed uint64 `json:"seed"`
	// Examples caps the distinct training problems (a fixed labelled set, reshuffled each
	// epoch); 0 draws a fresh problem for every example.
	Examples int `json:"examples"`
	// StopAtAccuracy ends training once the greedy accuracy on validation problems (from the
	// training split, never the held-out set) reaches it, checked every CheckEvery steps on
	// CheckSize problems; 0 disables.
	StopAtAccuracy float64 `json:"stop_at_accuracy"`
	CheckEvery     int     `json:"check_every"`
	CheckSize      int     `json:"check_size"`
}

// sftRunConfig is the "config" of an sft run's config.json.
type sftRunConfig struct {
	rl.SFTConfig
	sftOptions
}

// modelShape overrides a preset's dimensions.
type modelShape struct {
	Layers   int `json:"layers"`
	Heads    int `json:"heads"`
	Channels int `json:"channels"`
	Context  int `json:"context"`
}

// defaultSFTConfig is tuned so the default run teaches the default addition task to about half
// accuracy in a few minutes on two cores, leaving room for RL to improve it.
func defaultSFTConfig() rl.SFTConfig {
	c := rl.DefaultSFTConfig()
	c.Steps, c.Batch, c.LR, c.MinLR, c.Warmup = 1500, 32, 3e-3, 3e-4, 30
	return c
}

func addSFTFlags(fs *pflag.FlagSet, c *rl.SFTConfig, o *sftOptions) {
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
	return &sftFlags{Run: rlrun.Run{Command: "sft"}, cfg: defaultSFTConfig(), sftOpts: sftOptions{Preset: "gpt2-micro", Seed: 1, StopAtAccuracy: 0.6, CheckEvery: 25, CheckSize: 200}}
}

// sftCommand is `vkgrad sft`.
func sftCommand() command {
	return command{name: "sft", summary: "supervised fine-tuning on a built-in task or a --dataset (the start of RL fine-tuning)", setup: func(fs *pflag.FlagSet) func([]string) error {
		f := newSFTFlags()
		f.PresetType = func() string {
			c, _ := llama.Preset(f.sftOpts.Preset)
			return c.ModelType
		}
		f.EvalTemp = 1
		f.Supervised = true
		f.common = addCommonFlags(fs)
		f.Tasks = rlrun.DefaultTasks()
		addTaskFlags(fs, &f.Tasks)
		addRunFlags(fs, &f.Run, "start from this model (checkpoint or run directory) instead of a new one")
		addSFTFlags(fs, &f.cfg, &f.sftOpts)
		f.common.addDistributedFlag(fs)
		return func(args []string) error { return f.run(fs, args) }
	}}
}

func (f *sftFlags) runConfig() sftRunConfig {
	return sftRunConfig{SFTConfig: f.cfg, sftOptions: f.sftOpts}
}

func (f *sftFlags) run(fs *pflag.FlagSet, args []string) (err error) {
	if len(args) > 0 {
		return fmt.Errorf("sft takes no arguments, got %q", args)
	}
	if err := prepareRun(&f.Run, f.common, fs, f.resumeSpec()); err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	defer func() { f.Close(err != nil) }()
	m, err := f.policy()
	if err != nil {
		return err
	}
	if err := f.Setup.CheckPrompts(m, f.Family.Tok, f.Supervised); err != nil {
		return err
	}
	if err := f.checkConversations(m); err != nil {
		return err
	}
	tr, err := f.trainer(m)
	if err != nil {
		return flagNamed(fs, err)
	}
	check, err := f.checkSet()
	if err != nil {
		return err
	}
	if err := f.Restore(tr, f.cfg.Steps); err != nil {
		return err
	}
	if err := f.WriteConfig(m, f.runConfig()); err != nil {
		return err
	}
	f.Log.Info().Str("model", rlrun.DescribePolicy(m)).Str("params", logfmt.Count(m.NumParams())).Str("prompts", f.Tasks.Source()).
		Str("run_dir", f.RunDir).Msg("supervised training")
	return f.supervise(m, tr, check)
}

// resumeSpec restores sft's own settings from a resumed run's config.json.
func (f *sftFlags) resumeSpec() resumeSpec {
	return resumeSpec{
		decode: func(raw json.RawMessage) error {
			c := f.runConfig()
			if err := json.Unmarshal(raw, &c); err != nil {
				return err
			}
			// A run from before conversations trained every assistant turn trained the last
			// one alone; it goes on doing so.
			var keys map[string]json.RawMessage
			if json.Unmarshal(raw, &keys) == nil {
				if _, ok := keys["last_turn_only"]; !ok {
					c.LastTurnOnly = true
				}
			}
			f.cfg, f.sftOpts = c.SFTConfig, c.sftOptions
			return nil
		},
		register:  func(fs *pflag.FlagSet) { addSFTFlags(fs, &f.cfg, &f.sftOpts) },
		mayChange: []string{"stop-at-accuracy", "check-every", "check-size"},
	}
}

// policy is the model to train: --init's or the resumed run's, else a new one of --preset's
// shape (with --lora-rank's adapters).
func (f *sftFlags) policy() (rl.Policy, error) {
	m, _, err := f.Model(false)
	if err != nil || m != nil {
		return m, err
	}
	if m, err = f.newModel(); err != nil {
		return nil, err
	}
	return m, f.LoRA.AddAdapters(m)
}

// trainer builds the supervised trainer over the task's (or --examples') prompts, spread over
// the ranks under MPI.
func (f *sftFlags) trainer(m rl.Policy) (*rl.SFTTrainer, error) {
	f.cfg.EOS = f.Family.EOS
	src := f.Setup.Train
	if f.sftOpts.Examples < 0 {
		return nil, fmt.Errorf("--examples %d: want >= 0", f.sftOpts.Examples)
	}
	if f.sftOpts.Examples > 0 {
		var err error
		if src, err = fixedSet(src, f.sftOpts.Examples, f.Tasks.DataSeed); err != nil {
			return nil, fmt.Errorf("--examples: %w", err)
		}
	}
	if err := checkOptimizerFlags(f.cfg.Settings, f.cfg.Steps); err != nil {
		return nil, err
	}
	tr, err := rl.NewSFTTrainer(m, f.Family.Tok, src, f.cfg)
	if err != nil {
		return nil, err
	}
	tr.Chat = f.Family.Turns
	tr.SetLossScaler(precision.LossScaler(f.Precision))
	if err := f.JoinTrainer(tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// checkConversations lays out, before the first step, every conversation that is to be trained
// on all its assistant turns, refusing one the template cannot split into turns or m's context
// cannot hold, naming its file and line.
func (f *sftFlags) checkConversations(m rl.Policy) error {
	if f.cfg.LastTurnOnly {
		return nil
	}
	for _, p := range f.Setup.Prompts {
		if len(p.Conversation) == 0 {
			continue
		}
		q, err := p.RL(nil)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Where, err)
		}
		var ids []int32
		if f.Family.Turns == nil {
			ids, _, err = rl.PlainConversationTokens(f.Family.Tok, q.Conversation, int32(f.Family.EOS))
		} else {
			ids, _, err = rl.ConversationTokens(f.Family.Turns, f.Family.Tok, q.Conversation, q.Tools)
		}
		if err != nil {
			return fmt.Errorf("%s: %w (--last-turn-only trains the final turn alone)", p.Where, err)
		}
		if len(ids)-1 > m.MaxSeqLen() {
			return fmt.Errorf("%s: the conversation's %d tokens exceed the model's context of %d", p.Where, len(ids), m.MaxSeqLen())
		}
	}
	return nil
}

// checkSet is the validation problems --stop-at-accuracy checks (none when it is 0).
func (f *sftFlags) checkSet() ([]rl.Prompt, error) {
	o := f.sftOpts
	if o.StopAtAccuracy < 0 || o.StopAtAccuracy > 1 || o.CheckEvery < 1 || o.CheckSize < 1 {
		return nil, fmt.Errorf("--stop-at-accuracy %v, --check-every %d, --check-size %d: want a value in [0, 1] and positive counts", o.StopAtAccuracy, o.CheckEvery, o.CheckSize)
	}
	if o.StopAtAccuracy == 0 {
		return nil, nil
	}
	check, err := validationSet(f.Setup, o.CheckSize, f.Tasks.DataSeed)
	if err != nil {
		return nil, fmt.Errorf("--stop-at-accuracy: %w", err)
	}
	return check, nil
}

// supervise evaluates, trains to the last step (or to --stop-at-accuracy), evaluates again, saves
// and prints the summary.
func (f *sftFlags) supervise(m rl.Policy, tr *rl.SFTTrainer, check []rl.Prompt) error {
	l, err := f.Tune(m, tr, f.cfg.Steps, nil, func(l *rlrun.TuneLoop) runloop.Trainer { return &sftSteps{l, f, tr, check} })
	if err != nil || !l.Finished() {
		return err
	}
	l.Finish()
	fmt.Fprintf(stdout, "next: vkgrad grpo --init %s   (or vkgrad ppo --init %s)\n", f.RunDir, f.RunDir)
	return nil
}

// sftSteps are the steps of an sft run: each goes to the run's metrics and progress bar, and
// --stop-at-accuracy may end the run.
type sftSteps struct {
	*rlrun.TuneLoop
	f     *sftFlags
	tr    *rl.SFTTrainer
	check []rl.Prompt
}

func (s *sftSteps) Steps() int { return s.tr.Step }
func (s *sftSteps) Done() bool { return s.tr.Step >= s.Last }

func (s *sftSteps) Step() (int, map[string]float64, bool, error) {
	st, err := s.tr.TrainStep()
	if err != nil {
		return 0, nil, false, err
	}
	if st.Skipped {
		s.Bar.Clear()
		s.f.Log.Warn().Int("step", st.Step).Str("why", st.Reason).Msg("skipped a step whose gradient overflowed; the weights were not updated")
		s.Metrics.Log().Str("kind", "sft").Int("step", st.Step).Bool("skipped", true).Str("reason", st.Reason).Float32("loss_scale", st.LossScale).Msg("")
		return st.Step, map[string]float64{runloop.Skipped: 1}, false, nil
	}
	trainrun.StepLine(s.Metrics.Log().Str("kind", "sft"), st, s.f.Cluster != nil).Msg("")
	s.Bar.Update(st.Step, fmt.Sprintf("loss %.3f", st.Loss))
	if done, err := s.f.checkAccuracy(s.Policy, s.check, st.Step, s.State); err != nil || done {
		return st.Step, nil, done, err
	}
	return st.Step, nil, false, s.CheckMetrics(st.Step)
}

// checkAccuracy measures greedy accuracy on the check set every --check-every steps and says
// whether it reached --stop-at-accuracy (recording why the run ends in rs).
func (f *sftFlags) checkAccuracy(m rl.Policy, check []rl.Prompt, step int, rs *rlrun.RunState) (bool, error) {
	if len(check) == 0 || step%f.sftOpts.CheckEvery != 0 || step >= f.cfg.Steps {
		return false, nil
	}
	r, err := rl.Evaluate(m, f.Family.Tok, check, f.Setup.Reward, rl.EvalConfig{MaxNewTokens: f.Tasks.EvalMax, EOS: f.Family.EOS, Success: 1,
		Comm: f.Cluster.Comm()})
	if err != nil {
		return false, err
	}
	f.Metrics.Log().Str("kind", "sft_check").Int("step", step).Float64("validation_accuracy", r.Accuracy).Msg("")
	if r.Accuracy < f.sftOpts.StopAtAccuracy {
		return false, nil
	}
	f.Log.Info().Int("step", step).Float64("validation_accuracy", r.Accuracy).Float64("stop_at", f.sftOpts.StopAtAccuracy).
		Msg("validation accuracy reached --stop-at-accuracy; stopping")
	rs.Stopped = fmt.Sprintf("validation accuracy %.3f reached --stop-at-accuracy %g", r.Accuracy, f.sftOpts.StopAtAccuracy)
	return true, nil
}

// validationSet draws up to n distinct problems of the training split per task (fewer when the
// split is small), from a stream seeded apart from the training stream's.
func validationSet(s *rlrun.Setup, n int, seed uint64) ([]rl.Prompt, error) {
	if s.Mix == nil { // a dataset: its held-out prompts
		return s.HeldOut[:min(n, len(s.HeldOut))], nil
	}
	var out []rl.Prompt
	for _, t := range s.Mix.Tasks {
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
			rp, err := p.RL(s.Enc)
			if err != nil {
				return nil, err
			}
			out = append(out, rp)
		}
	}
	return out, nil
}

func (f *sftFlags) newModel() (rl.Policy, error) {
	shape := f.sftOpts.Shape
	for _, o := range []struct {
		name string
		v    int
	}{{"layers", shape.Layers}, {"heads", shape.Heads}, {"channels", shape.Channels}, {"context", shape.Context}} {
		if o.v < 0 {
			return nil, fmt.Errorf("--%s %d: want >= 0", o.name, o.v)
		}
	}
	if slices.Contains(llama.PresetNames(), f.sftOpts.Preset) {
		return f.newLlama()
	}
	cfg, err := gpt2.Preset(f.sftOpts.Preset)
	if err != nil {
		return nil, fmt.Errorf("--preset: %w (or a Llama-family shape: %s)", err, strings.Join(llama.PresetNames(), ", "))
	}
	override(&cfg.NumLayers, shape.Layers)
	override(&cfg.NumHeads, shape.Heads)
	override(&cfg.Channels, shape.Channels)
	override(&cfg.MaxSeqLen, shape.Context)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model shape: %w", err)
	}
	if cfg.VocabSize < f.Family.Tok.VocabSize() {
		return nil, fmt.Errorf("--preset %s: vocabulary of %d is smaller than GPT-2's %d (the tasks use GPT-2 tokens)", f.sftOpts.Preset, cfg.VocabSize, f.Family.Tok.VocabSize())
	}
	m, err := gpt2.New(f.Be, cfg)
	if err != nil {
		return nil, err
	}
	return nn.GPT2(m), m.InitRandom(f.sftOpts.Seed)
}

// newLlama makes a random Llama-family model of a preset's shape (--heads sets the key/value
// heads too, --channels the hidden size with head_dim = channels/heads).
func (f *sftFlags) newLlama() (rl.Policy, error) {
	cfg, err := llama.Preset(f.sftOpts.Preset)
	if err != nil {
		return nil, fmt.Errorf("--preset: %w", err)
	}
	shape := f.sftOpts.Shape
	override(&cfg.Layers, shape.Layers)
	if shape.Heads > 0 || shape.Channels > 0 {
		override(&cfg.Heads, shape.Heads)
		override(&cfg.Hidden, shape.Channels)
		cfg.KVHeads = min(cfg.KVHeads, cfg.Heads)
		if cfg.Heads%cfg.KVHeads != 0 {
			cfg.KVHeads = cfg.Heads
		}
		if cfg.Hidden%cfg.Heads != 0 {
			return nil, fmt.Errorf("--channels %d is not a multiple of --heads %d", cfg.Hidden, cfg.Heads)
		}
		cfg.HeadDim = cfg.Hidden / cfg.Heads
	}
	override(&cfg.MaxPositions, shape.Context)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model shape: %w", err)
	}
	if cfg.Vocab < f.Family.Tok.VocabSize() {
		return nil, fmt.Errorf("--preset %s: vocabulary of %d is smaller than the tokenizer's %d", f.sftOpts.Preset, cfg.Vocab, f.Family.Tok.VocabSize())
	}
	if v := f.Family.Tok.VocabSize(); cfg.Vocab > v {
		// A new model over this tokenizer: rows past its vocabulary could only be sampled
		// into tokens that have no text.
		f.Log.Info().Int("preset_vocab", cfg.Vocab).Int("vocab", v).Msg("the new model's vocabulary and EOS are the tokenizer's")
		cfg.Vocab, cfg.BOS, cfg.EOS = v, nil, []int{f.Family.EOS}
	}
	m, err := llama.New(f.Be, cfg)
	if err != nil {
		return nil, err
	}
	return nn.Llama(m), m.InitRandom(f.sftOpts.Seed)
}

// override sets *dst to v when v is positive (a flag's 0 keeps the preset's value).
func override(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
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
	return &fixedSource{set: set, r: r, order: r.Perm(n)}, nil
}

// fixedSource cycles over a fixed set of problems in a fresh order each epoch; it saves its
// position (an rl.StatefulSource), so a resumed run continues the same order.
type fixedSource struct {
	set   []rl.Prompt
	r     *rng.RNG
	order []int
	pos   int
}

func (s *fixedSource) Next() (rl.Prompt, error) {
	if s.pos == len(s.order) {
		s.r.Shuffle(s.order)
		s.pos = 0
	}
	s.pos++
	return s.set[s.order[s.pos-1]], nil
}

type fixedSourceState struct {
	RNG   []uint64 `json:"rng"`
	Order []int    `json:"order"`
	Pos   int      `json:"pos"`
}

func (s *fixedSource) SourceState() (json.RawMessage, error) {
	return json.Marshal(fixedSourceState{RNG: s.r.State(), Order: s.order, Pos: s.pos})
}

func (s *fixedSource) SetSourceState(raw json.RawMessage) error {
	var st fixedSourceState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("--examples set position: %w", err)
	}
	if len(st.Order) != len(s.set) || st.Pos < 0 || st.Pos > len(st.Order) {
		return fmt.Errorf("--examples set position: order of %d at %d for a set of %d", len(st.Order), st.Pos, len(s.set))
	}
	for _, i := range st.Order {
		if i < 0 || i >= len(s.set) {
			return fmt.Errorf("--examples set position: index %d outside a set of %d", i, len(s.set))
		}
	}
	if err := s.r.SetState(st.RNG); err != nil {
		return fmt.Errorf("--examples set position: %w", err)
	}
	copy(s.order, st.Order)
	s.pos = st.Pos
	return nil
}
