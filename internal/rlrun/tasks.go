package rlrun

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// Tasks choose the prompts: built-in tasks mixed by ratio and their options. They are saved
// in the run's config.json; a later command started with --init on that run reuses them only
// when asked (--init-task), and flags given still win.
type Tasks struct {
	Spec     string        `json:"task"`
	Options  tasks.Options `json:"task_options"`
	Shuffle  bool          `json:"shuffle_tasks"`
	DataSeed uint64        `json:"data_seed"`
	EvalSize int           `json:"eval_size"`
	EvalSeed uint64        `json:"eval_seed"`
	EvalMax  int           `json:"eval_max_new_tokens"`
	// EvalSamples answers are also sampled per problem at the run's temperature.
	EvalSamples int `json:"eval_samples"`
	// EvalBatch is the number of answers decoded together in evaluation (0: all at once).
	EvalBatch int `json:"eval_batch"`
	// NoEvalCache measures the accuracy before training even when the cache holds it.
	NoEvalCache bool `json:"-"`
	// Data, when its Path is set, replaces the built-in tasks with a dataset file.
	Data Dataset `json:"data"`
}

// DefaultTasks are the settings of the default addition task and its held-out evaluation.
func DefaultTasks() Tasks {
	o := tasks.DefaultOptions()
	o.Addition.MinDigits, o.Addition.MaxDigits = 2, 2
	// 200 problems measure an accuracy to within 3.5 points (one standard error, at worst),
	// with 2 samples each: 600 short answers, the decoding of a few default grpo steps.
	return Tasks{Spec: "addition", Options: o, DataSeed: 1, EvalSize: 200, EvalSeed: 12345, EvalMax: 8, EvalSamples: 2, EvalBatch: 256,
		Data: DefaultDataset()}
}

// Source names where the prompts come from, for the log: the dataset file or the tasks.
func (t *Tasks) Source() string {
	if t.Data.Path != "" {
		return t.Data.Path
	}
	return "task " + t.Spec
}

// Setup is everything a command needs from its task settings: the training prompts, their
// reward and the held-out set. Close stops what it started.
type Setup struct {
	Mix     *tasks.Mix // the built-in tasks; nil for a dataset
	Train   rl.PromptSource
	Reward  *rl.Combined
	HeldOut []rl.Prompt
	Enc     tasks.Encoder
	// Prompts are a dataset's training and held-out prompts, with the file and line of each
	// (none for the built-in tasks).
	Prompts []tasks.Prompt
	// Episodes, when set, evaluates each held-out prompt as an episode: its Env, Episodes and
	// MaxNewTokens (per turn) replace the single-turn answer's settings, and the episode's
	// return alone scores it, so the accuracy is the share of episodes returning 1 or more.
	Episodes *rl.EvalConfig
	closers  []func() // an external reward process, an environment
}

// AddCloser has Close call f too (after what the setup started itself).
func (s *Setup) AddCloser(f func()) { s.closers = append(s.closers, f) }

// Close stops what the setup started.
func (s *Setup) Close() {
	for _, f := range s.closers {
		f()
	}
}

// Setup checks the evaluation settings and builds the prompts, reward and held-out set: a
// dataset's, an environment's empty rows, or the built-in tasks' (GPT-2's tokenizer only).
func (t *Tasks) Setup(fam *Family, o SetupOptions) (*Setup, error) {
	if t.EvalSize < 0 {
		return nil, fmt.Errorf("--eval-size %d: want >= 0", t.EvalSize)
	}
	if t.EvalSamples < 0 {
		return nil, fmt.Errorf("--eval-samples %d: want >= 0", t.EvalSamples)
	}
	if t.EvalMax < 1 {
		return nil, fmt.Errorf("--eval-max-new-tokens %d: want >= 1", t.EvalMax)
	}
	if t.EvalBatch < 0 {
		return nil, fmt.Errorf("--eval-batch %d: want >= 0 (0: all answers at once)", t.EvalBatch)
	}
	if _, _, named, _ := takeTerm(strings.Split(t.Data.Reward, ","), "env", ""); named && o.Env == "" {
		return nil, fmt.Errorf("--reward %q names env, the return of a multi-turn episode: give --env NAME to run episodes", t.Data.Reward)
	}
	enc := tasks.EncoderOf(fam.Tok.Encode)
	if t.Data.Path != "" {
		return t.Data.setup(t, enc, fam.Chat, o)
	}
	if o.Env != "" {
		return t.emptyRowsSetup(o)
	}
	if fam.HFDir != "" {
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
	s := &Setup{Mix: mix, Train: tasks.RLSource(src, enc), Reward: reward, Enc: enc}
	if t.EvalSize > 0 {
		ps, err := mix.HeldOut(t.EvalSize, t.EvalSeed)
		if err != nil {
			return nil, err
		}
		if s.HeldOut, err = tasks.RLPrompts(ps, enc); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// emptyRowsSetup is an environment run without a dataset: the built-in tasks do not apply;
// every prompt, the --eval-size held-out ones too, is an empty row that the environment's
// reset opens, and --reward scores (by default the episode's return alone).
func (t *Tasks) emptyRowsSetup(o SetupOptions) (*Setup, error) {
	terms, cmdWeight, err := t.Data.verifiers(true)
	if err != nil {
		return nil, err
	}
	if needsAnswer(terms) {
		return nil, fmt.Errorf("--reward %q compares completions with each prompt's answer, and without --dataset an environment's episodes have none", t.Data.Reward)
	}
	rows := emptyRows{task: o.Env}
	s := &Setup{Train: rows, HeldOut: make([]rl.Prompt, t.EvalSize)}
	for i := range s.HeldOut {
		s.HeldOut[i], _ = rows.Next()
	}
	if s.Reward, s.closers, err = t.Data.rewards(terms, cmdWeight, o.Announce, o.Log); err != nil {
		return nil, err
	}
	return s, nil
}

// Evaluate reports held-out accuracy, greedy and sampled at temp (nil when there is no
// held-out set), the answers scored over comm's ranks (nil: one process), with a progress bar
// on rank 0's stderr.
func (s *Setup) Evaluate(m nn.LM, t *Tasks, fam *Family, temp float64, comm *mpi.Comm) (*rl.EvalResult, error) {
	if len(s.HeldOut) == 0 {
		return nil, nil
	}
	var bar *progress.Bar
	defer func() {
		if bar != nil {
			bar.Clear()
		}
	}()
	cfg := rl.EvalConfig{MaxNewTokens: t.EvalMax, EOS: fam.EOS, Success: 1,
		GenBatch: t.EvalBatch, Samples: t.EvalSamples, Sampling: rl.Sampling{Temperature: temp, TopP: 1}, Seed: t.EvalSeed, Comm: comm,
		Progress: func(done, total int) {
			if comm != nil && comm.Rank() != 0 {
				return
			}
			if bar == nil {
				bar = progress.New(os.Stderr, total)
			}
			bar.Update(done, "held-out answers")
		}}
	score := s.Reward
	if e := s.Episodes; e != nil {
		cfg.Env, cfg.Episodes, cfg.MaxNewTokens = e.Env, e.Episodes, e.MaxNewTokens
		var err error
		if score, err = rl.NewCombined(rl.Weighted{Reward: rl.EnvReward{}, Weight: 1}); err != nil {
			return nil, err
		}
	}
	return rl.Evaluate(m, fam.Tok, s.HeldOut, score, cfg)
}

// CheckPrompts refuses, before the first step, a dataset prompt that m's context cannot hold
// (with its answer and EOS when supervised), naming its file and line: drawn later, it would
// stop the run at whatever step drew it, and every resume there again.
func (s *Setup) CheckPrompts(m nn.LM, tok Tokenizer, supervised bool) error {
	maxT := m.MaxSeqLen()
	for _, p := range s.Prompts {
		n := len(tok.Encode(p.Text))
		switch {
		case n == 0:
			return fmt.Errorf("%s: the prompt encodes to no tokens", p.Where)
		case supervised && n+len(tok.Encode(p.Answer)) > maxT:
			return fmt.Errorf("%s: the prompt (%d tokens) and its answer exceed the model's context of %d", p.Where, n, maxT)
		case n >= maxT:
			return fmt.Errorf("%s: the prompt's %d tokens leave no room for a completion in the model's context of %d", p.Where, n, maxT)
		}
	}
	return nil
}

// SetupOptions are what the command adds to its task settings when they are set up.
type SetupOptions struct {
	// Supervised: every prompt needs an answer to train on (sft).
	Supervised bool
	// Announce is called just before the reward program starts.
	Announce func()
	// Log says what the run does differently from what was asked (no held-out set).
	Log zerolog.Logger
	// Env names the environment in which each prompt starts a multi-turn episode (--env),
	// whose return the reward term env scores; "" for single-turn completions.
	Env string
	// Progress, when set, shows the download of a Hugging Face dataset's files.
	Progress io.Writer
}

// emptyRows are the prompts of an environment run without a dataset: rows with nothing in
// them but the task's name (the environment's, for the metrics by task), each episode opened
// by the environment's reset.
type emptyRows struct{ task string }

func (e emptyRows) Next() (rl.Prompt, error) { return rl.Prompt{Meta: rl.Meta{"task": e.task}}, nil }
