package rlrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/runloop"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// SFTSettings are an sft run's settings: the trainer's and the run's own, kept together as
// the "config" of its config.json.
type SFTSettings struct {
	rl.SFTConfig
	SFTOptions
}

// SFTOptions are sft's settings beyond rl.SFTConfig.
type SFTOptions struct {
	Preset string     `json:"preset"`
	Shape  ModelShape `json:"shape"`
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

// ModelShape overrides a preset's dimensions (0 keeps the preset's).
type ModelShape struct {
	Layers   int `json:"layers"`
	Heads    int `json:"heads"`
	Channels int `json:"channels"`
	Context  int `json:"context"`
}

// Decode reads a resumed run's settings (its config.json's "config") over s, leaving s as it
// was on an error.
func (s *SFTSettings) Decode(raw json.RawMessage) error {
	c := *s
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	// A run from before conversations trained every assistant turn trained the last one
	// alone; it goes on doing so.
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) == nil {
		if _, ok := keys["last_turn_only"]; !ok {
			c.LastTurnOnly = true
		}
	}
	*s = c
	return nil
}

// SFT is an sft run: its inputs, the model (--init's, the resumed run's or a new one of
// s.Preset's shape), the supervised trainer spread over the job's ranks when launched so, and
// the steps from the first (or the resumed run's) to the last or to s.StopAtAccuracy. s is
// read once start has run, so a resumed run's settings decoded into it apply.
func (r *Run) SFT(s *SFTSettings) (err error) {
	r.Supervised, r.EvalTemp = true, 1
	r.PresetType = func() string {
		c, _ := llama.Preset(s.Preset)
		return c.ModelType
	}
	if err := r.start(); err != nil {
		return err
	}
	defer func() { r.Close(err != nil) }()
	m, err := r.sftPolicy(s)
	if err != nil {
		return err
	}
	if err := r.Setup.CheckPrompts(m, r.Family.Tok, r.Supervised); err != nil {
		return err
	}
	if err := r.checkConversations(m, s.LastTurnOnly); err != nil {
		return err
	}
	tr, err := r.sftTrainer(m, s)
	if err != nil {
		return FlagNamed(err, r.Line.Defined)
	}
	check, err := r.checkSet(s.SFTOptions)
	if err != nil {
		return err
	}
	if err := r.restore(tr, s.Steps); err != nil {
		return err
	}
	if err := r.writeConfig(m, *s); err != nil {
		return err
	}
	r.Log.Info().Str("model", DescribePolicy(m)).Str("params", logfmt.Count(m.NumParams())).Str("prompts", r.Tasks.Source()).
		Str("run_dir", r.RunDir).Msg("supervised training")
	return r.supervise(m, tr, s, check)
}

// sftPolicy is the model to train: --init's or the resumed run's, else a new one of the
// preset's shape (with --lora-rank's adapters).
func (r *Run) sftPolicy(s *SFTSettings) (nn.LM, error) {
	m, _, err := r.policy(false)
	if err != nil || m != nil {
		return m, err
	}
	if m, err = r.newModel(s.SFTOptions); err != nil {
		return nil, err
	}
	return m, r.LoRA.AddAdapters(m)
}

// sftTrainer builds the supervised trainer over the task's (or --examples') prompts, spread
// over the ranks under MPI.
func (r *Run) sftTrainer(m nn.LM, s *SFTSettings) (*rl.SFTTrainer, error) {
	s.EOS = r.Family.EOS
	src := r.Setup.Train
	if s.Examples < 0 {
		return nil, fmt.Errorf("--examples %d: want >= 0", s.Examples)
	}
	if s.Examples > 0 {
		var err error
		if src, err = fixedSet(src, s.Examples, r.Tasks.DataSeed); err != nil {
			return nil, fmt.Errorf("--examples: %w", err)
		}
	}
	if err := checkOptimizer(s.Settings, s.Steps); err != nil {
		return nil, err
	}
	tr, err := rl.NewSFTTrainer(m, r.Family.Tok, src, s.SFTConfig)
	if err != nil {
		return nil, err
	}
	tr.Chat = r.Family.Turns
	tr.SetLossScaler(precision.LossScaler(r.Precision))
	if err := r.joinTrainer(tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// checkConversations lays out, before the first step, every conversation that is to be trained
// on all its assistant turns (unless lastTurnOnly), refusing one the template cannot split into
// turns or m's context cannot hold, naming its file and line.
func (r *Run) checkConversations(m nn.LM, lastTurnOnly bool) error {
	if lastTurnOnly {
		return nil
	}
	for _, p := range r.Setup.Prompts {
		if len(p.Conversation) == 0 {
			continue
		}
		q, err := p.RL(nil)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Where, err)
		}
		var ids []int32
		if r.Family.Turns == nil {
			ids, _, err = rl.PlainConversationTokens(r.Family.Tok, q.Conversation, int32(r.Family.EOS))
		} else {
			ids, _, err = rl.ConversationTokens(r.Family.Turns, r.Family.Tok, q.Conversation, q.Tools)
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
func (r *Run) checkSet(o SFTOptions) ([]rl.Prompt, error) {
	if o.StopAtAccuracy < 0 || o.StopAtAccuracy > 1 || o.CheckEvery < 1 || o.CheckSize < 1 {
		return nil, fmt.Errorf("--stop-at-accuracy %v, --check-every %d, --check-size %d: want a value in [0, 1] and positive counts", o.StopAtAccuracy, o.CheckEvery, o.CheckSize)
	}
	if o.StopAtAccuracy == 0 {
		return nil, nil
	}
	check, err := validationSet(r.Setup, o.CheckSize, r.Tasks.DataSeed)
	if err != nil {
		return nil, fmt.Errorf("--stop-at-accuracy: %w", err)
	}
	return check, nil
}

// supervise evaluates, trains to the last step (or to --stop-at-accuracy), evaluates again, saves
// and prints the summary.
func (r *Run) supervise(m nn.LM, tr *rl.SFTTrainer, s *SFTSettings, check []rl.Prompt) error {
	l, err := r.tune(m, tr, s.Steps, nil, func(l *TuneLoop) runloop.Trainer { return &sftSteps{l, s, tr, check} })
	if err != nil || !l.finishedAll() {
		return err
	}
	l.finish()
	fmt.Fprintf(r.Stdout, "next: vkgrad grpo --init %s   (or vkgrad ppo --init %s)\n", r.RunDir, r.RunDir)
	return nil
}

// sftSteps are the steps of an sft run: each goes to the run's metrics and progress bar, and
// --stop-at-accuracy may end the run.
type sftSteps struct {
	*TuneLoop
	s     *SFTSettings
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
		s.Log.Warn().Int("step", st.Step).Str("why", st.Reason).Msg("skipped a step whose gradient overflowed; the weights were not updated")
		s.Metrics.Log().Str("kind", "sft").Int("step", st.Step).Bool("skipped", true).Str("reason", st.Reason).Float32("loss_scale", st.LossScale).Msg("")
		return st.Step, map[string]float64{runloop.Skipped: 1}, false, nil
	}
	trainrun.StepLine(s.Metrics.Log().Str("kind", "sft"), st, s.Cluster != nil).Msg("")
	s.Bar.Update(st.Step, fmt.Sprintf("loss %.3f", st.Loss))
	if done, err := s.checkAccuracy(st.Step); err != nil || done {
		return st.Step, nil, done, err
	}
	return st.Step, nil, false, s.checkMetrics(st.Step)
}

// checkAccuracy measures greedy accuracy on the check set every --check-every steps and says
// whether it reached --stop-at-accuracy (recording why the run ends in the run's state).
func (s *sftSteps) checkAccuracy(step int) (bool, error) {
	o := s.s.SFTOptions
	if len(s.check) == 0 || step%o.CheckEvery != 0 || step >= s.s.Steps {
		return false, nil
	}
	res, err := rl.Evaluate(s.Policy, s.Family.Tok, s.check, s.Setup.Reward, rl.EvalConfig{MaxNewTokens: s.Tasks.EvalMax, EOS: s.Family.EOS, Success: 1,
		Comm: s.Cluster.Comm()})
	if err != nil {
		return false, err
	}
	s.Metrics.Log().Str("kind", "sft_check").Int("step", step).Float64("validation_accuracy", res.Accuracy).Msg("")
	if res.Accuracy < o.StopAtAccuracy {
		return false, nil
	}
	s.Log.Info().Int("step", step).Float64("validation_accuracy", res.Accuracy).Float64("stop_at", o.StopAtAccuracy).
		Msg("validation accuracy reached --stop-at-accuracy; stopping")
	s.State.Stopped = fmt.Sprintf("validation accuracy %.3f reached --stop-at-accuracy %g", res.Accuracy, o.StopAtAccuracy)
	return true, nil
}

// validationSet draws up to n distinct problems of the training split per task (fewer when the
// split is small), from a stream seeded apart from the training stream's.
func validationSet(s *Setup, n int, seed uint64) ([]rl.Prompt, error) {
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

// newModel makes a random model of o's preset and shape.
func (r *Run) newModel(o SFTOptions) (nn.LM, error) {
	shape := o.Shape
	for _, d := range []struct {
		name string
		v    int
	}{{"layers", shape.Layers}, {"heads", shape.Heads}, {"channels", shape.Channels}, {"context", shape.Context}} {
		if d.v < 0 {
			return nil, fmt.Errorf("--%s %d: want >= 0", d.name, d.v)
		}
	}
	if slices.Contains(llama.PresetNames(), o.Preset) {
		return r.newLlama(o)
	}
	cfg, err := gpt2.Preset(o.Preset)
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
	if cfg.VocabSize < r.Family.Tok.VocabSize() {
		return nil, fmt.Errorf("--preset %s: vocabulary of %d is smaller than GPT-2's %d (the tasks use GPT-2 tokens)", o.Preset, cfg.VocabSize, r.Family.Tok.VocabSize())
	}
	m, err := gpt2.New(r.Be, cfg)
	if err != nil {
		return nil, err
	}
	return nn.GPT2(m), m.InitRandom(o.Seed)
}

// newLlama makes a random Llama-family model of a preset's shape (--heads sets the key/value
// heads too, --channels the hidden size with head_dim = channels/heads).
func (r *Run) newLlama(o SFTOptions) (nn.LM, error) {
	cfg, err := llama.Preset(o.Preset)
	if err != nil {
		return nil, fmt.Errorf("--preset: %w", err)
	}
	shape := o.Shape
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
	if cfg.Vocab < r.Family.Tok.VocabSize() {
		return nil, fmt.Errorf("--preset %s: vocabulary of %d is smaller than the tokenizer's %d", o.Preset, cfg.Vocab, r.Family.Tok.VocabSize())
	}
	if v := r.Family.Tok.VocabSize(); cfg.Vocab > v {
		// A new model over this tokenizer: rows past its vocabulary could only be sampled
		// into tokens that have no text.
		r.Log.Info().Int("preset_vocab", cfg.Vocab).Int("vocab", v).Msg("the new model's vocabulary and EOS are the tokenizer's")
		cfg.Vocab, cfg.BOS, cfg.EOS = v, nil, []int{r.Family.EOS}
	}
	m, err := llama.New(r.Be, cfg)
	if err != nil {
		return nil, err
	}
	return nn.Llama(m), m.InitRandom(o.Seed)
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
