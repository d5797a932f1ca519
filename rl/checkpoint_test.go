package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// randomPrompts draws prompts at random from a seed: a resumed run only sees the same prompts
// when the stream's position is restored. With stateful it is a StatefulSource (restored from
// its RNG state), else a plain function (restored by replaying the drawn prompts).
type randomPrompts struct {
	r     *rng.RNG
	draws int
}

func (s *randomPrompts) Next() (Prompt, error) {
	s.draws++
	n := 1 + s.r.Intn(4)
	var b strings.Builder
	for range n {
		b.WriteByte("abcdefgh"[s.r.Intn(8)])
	}
	b.WriteByte('=')
	return Prompt{Text: b.String(), Answer: "aa.", Meta: Meta{"task": "toy"}}, nil
}

func (s *randomPrompts) SourceState() (json.RawMessage, error) { return json.Marshal(s.r.State()) }

func (s *randomPrompts) SetSourceState(raw json.RawMessage) error {
	var st []uint64
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	return s.r.SetState(st)
}

func newPrompts(seed uint64, stateful bool) (PromptSource, *randomPrompts) {
	s := &randomPrompts{r: rng.New(seed)}
	if stateful {
		return s, s
	}
	return PromptFunc(s.Next), s
}

// resumer is what the continuity tests drive.
type resumer interface {
	TrainStep() (*StepReport, error)
	Checkpoint() (*checkpoint.State, error)
}

// sameStepMetrics fails unless two step reports carry the same metrics, bit for bit.
func sameStepMetrics(t *testing.T, step int, a, b *StepReport) {
	t.Helper()
	if len(a.Metrics) != len(b.Metrics) || a.Action != b.Action || a.Reason != b.Reason {
		t.Fatalf("step %d: %d metrics (%s) vs %d (%s)", step, len(a.Metrics), a.Action, len(b.Metrics), b.Action)
	}
	for k, v := range a.Metrics {
		w, ok := b.Metrics[k]
		if !ok || math.Float64bits(v) != math.Float64bits(w) {
			t.Fatalf("step %d: metric %s is %v straight and %v resumed", step, k, v, w)
		}
	}
}

// sameState fails unless two checkpoints hold identical tensors, RNG and trainer state.
func sameState(t *testing.T, a, b *checkpoint.State) {
	t.Helper()
	eq := func(name string, x, y []float32) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d values", name, len(x), len(y))
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s[%d] = %v straight, %v resumed", name, i, x[i], y[i])
			}
		}
	}
	eq("params", a.Params, b.Params)
	eq("adam_m", a.AdamM, b.AdamM)
	eq("adam_v", a.AdamV, b.AdamV)
	if len(a.Extra) != len(b.Extra) {
		t.Fatalf("extra buffers %d vs %d", len(a.Extra), len(b.Extra))
	}
	for k := range a.Extra {
		eq("extra "+k, a.Extra[k], b.Extra[k])
	}
	if fmt.Sprint(a.RNG) != fmt.Sprint(b.RNG) || a.Step != b.Step {
		t.Fatalf("rng %v step %d straight, %v step %d resumed", a.RNG, a.Step, b.RNG, b.Step)
	}
	for _, k := range []string{MetaState, MetaConfig, MetaTrainer} {
		if a.Meta[k] != b.Meta[k] {
			t.Fatalf("meta %s: %s straight, %s resumed", k, a.Meta[k], b.Meta[k])
		}
	}
}

// checkContinuity runs n steps straight, and n/2 steps, a checkpoint file, a fresh trainer
// (from a different initial model) restored from it and n/2 more; every step's metrics and the
// final state must agree bit for bit.
func checkContinuity(t *testing.T, n int, build func(modelSeed uint64) resumer, restore func(tr resumer, st *checkpoint.State, path string) error) (straight []*StepReport) {
	t.Helper()
	a := build(3)
	for range n {
		rep, err := a.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		straight = append(straight, rep)
	}
	b := build(3)
	for s := range n / 2 {
		rep, err := b.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		sameStepMetrics(t, s+1, straight[s], rep)
	}
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	st, err := b.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(path, st); err != nil {
		t.Fatal(err)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := build(99) // parameters must come from the checkpoint, not the initial model
	if err := restore(c, loaded, path); err != nil {
		t.Fatal(err)
	}
	for s := n / 2; s < n; s++ {
		rep, err := c.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Step != s+1 {
			t.Fatalf("resumed step reports step %d, want %d", rep.Step, s+1)
		}
		sameStepMetrics(t, s+1, straight[s], rep)
	}
	sa, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, sa, sc)
	return straight
}

// GRPO with everything that carries state: a KL penalty against a reference that is blended
// toward the policy every two steps (so it differs from the initial model), two updates per
// batch, top-k sampling with the truncation replayed, micro-batches, a warmup and cosine
// schedule, and a prompt stream restored by replay.
func TestGRPOResumeBitForBit(t *testing.T) {
	var prompts []*randomPrompts
	build := func(seed uint64) resumer {
		cfg := DefaultGRPOTrainerConfig()
		cfg.Train = toyTrainConfig()
		cfg.Train.Steps, cfg.Train.Mu, cfg.Train.Warmup, cfg.Train.MinLR = 6, 2, 2, 1e-4
		cfg.Train.RefSyncEvery, cfg.Train.RefMixAlpha, cfg.Train.MicroBatch = 2, 0.5, 12
		cfg.Train.Rollout.Sampling.TopK = 8
		cfg.GRPO.GroupSize, cfg.GRPO.Beta = 4, 0.05
		src, rp := newPrompts(7, false)
		prompts = append(prompts, rp)
		tr, err := NewGRPOTrainer(nn.GPT2(toyModel(t, seed)), toy, src, countA(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	straight := checkContinuity(t, 6, build, func(tr resumer, st *checkpoint.State, path string) error {
		return tr.(*GRPOTrainer).Restore(st, path)
	})
	if straight[5].Metrics["ref_syncs"] != 3 || straight[5].Metrics["kl_mean"] == 0 || straight[5].Metrics["updates_applied"] != 2 {
		t.Fatalf("the test does not exercise the reference and the updates: %v", straight[5].Metrics)
	}
	// The resumed trainer's source was replayed: 3 steps of 4 prompts, then 3 more.
	if prompts[2].draws != 24 {
		t.Fatalf("resumed prompt source drew %d prompts, want 24", prompts[2].draws)
	}
}

// PPO with an adaptive KL controller, a separate value learning rate, value dropout, mini-batches, a critic
// warm-up, reference syncs and a stateful prompt source.
func TestPPOResumeBitForBit(t *testing.T) {
	var prompts []*randomPrompts
	var trainers []*PPOTrainer
	build := func(seed uint64) resumer {
		cfg := DefaultPPOTrainerConfig()
		cfg.Train = toyTrainConfig()
		cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.Train.Mu, cfg.Train.Warmup, cfg.Train.MinLR = 6, 6, 2, 1, 1e-3
		cfg.Train.RefSyncEvery = 4
		cfg.KLControl = KLControlConfig{Kind: "adaptive", InitCoef: 0.1, Target: 0.01, Horizon: 50}
		cfg.ValueHead.Dropout, cfg.ValueHead.Init, cfg.ValueHead.InitValue = 0.1, "random", 0.05
		cfg.CriticWarmup, cfg.ValueLR, cfg.SamplesPerPrompt, cfg.MiniBatches = 1, 1e-2, 2, 3
		src, rp := newPrompts(11, true)
		prompts = append(prompts, rp)
		tr, err := NewPPOTrainer(nn.GPT2(toyModel(t, seed)), toy, src, countA(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		trainers = append(trainers, tr)
		return tr
	}
	straight := checkContinuity(t, 6, build, func(tr resumer, st *checkpoint.State, path string) error {
		return tr.(*PPOTrainer).Restore(st, path)
	})
	if straight[5].Metrics["kl_coef"] == 0.1 || straight[5].Metrics["ref_syncs"] != 1 || straight[0].Metrics["critic_warmup"] != 1 {
		t.Fatalf("the test does not exercise the KL controller, the reference or the warm-up: %v", straight[5].Metrics)
	}
	if trainers[0].KL.Value() != trainers[2].KL.Value() {
		t.Fatalf("KL coefficient %v straight, %v resumed", trainers[0].KL.Value(), trainers[2].KL.Value())
	}
	// A stateful source is restored from its state, not replayed: it drew only 3 steps' prompts.
	if prompts[2].draws != 18 {
		t.Fatalf("resumed prompt source drew %d prompts, want 18 (restored, not replayed)", prompts[2].draws)
	}
}

// SFTTrainer resumes bit for bit too: losses, gradient norms, parameters and moments.
func TestSFTResumeBitForBit(t *testing.T) {
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.LR, cfg.MinLR, cfg.Warmup, cfg.EOS, cfg.WeightDecay = 6, 4, 1e-2, 1e-3, 2, toyEOS, 0.01
	build := func(seed uint64) *SFTTrainer {
		src, _ := newPrompts(5, false)
		tr, err := NewSFTTrainer(nn.GPT2(toyModel(t, seed)), toy, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	run := func(tr *SFTTrainer, n int) []SFTStats {
		var out []SFTStats
		for range n {
			s, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			s.Seconds = 0
			out = append(out, s)
		}
		return out
	}
	a := build(3)
	straight := run(a, 6)
	b := build(3)
	first := run(b, 3)
	path := filepath.Join(t.TempDir(), "sft.safetensors")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := build(99)
	if err := c.Restore(st, path); err != nil {
		t.Fatal(err)
	}
	resumed := append(first, run(c, 3)...)
	for i := range straight {
		if straight[i] != resumed[i] {
			t.Fatalf("step %d: %+v straight, %+v resumed", i+1, straight[i], resumed[i])
		}
	}
	sa, _ := a.Checkpoint()
	sc, _ := c.Checkpoint()
	sameState(t, sa, sc)
}

// A checkpoint that does not fit the trainer is refused with the file and the field named, and
// the trainer is left untouched.
func TestResumeMismatchErrors(t *testing.T) {
	dir := t.TempDir()
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.GroupSize, c.GRPO.Beta = 4, 0.1 })
	if _, err := tr.TrainStep(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "grpo.safetensors")
	if err := tr.Save(path); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(mutate func(*GRPOTrainerConfig)) *GRPOTrainer {
		return toyGRPO(t, func(c *GRPOTrainerConfig) {
			c.GRPO.GroupSize, c.GRPO.Beta = 4, 0.1
			if mutate != nil {
				mutate(c)
			}
		})
	}
	// More steps are fine.
	if err := fresh(func(c *GRPOTrainerConfig) { c.Train.Steps = 50 }).Restore(st, path); err != nil {
		t.Fatalf("changing the number of steps: %v", err)
	}
	for _, c := range []struct {
		name   string
		mutate func(*GRPOTrainerConfig)
		edit   func(*checkpoint.State)
		want   []string
	}{
		{"group size", func(c *GRPOTrainerConfig) { c.GRPO.GroupSize = 8 }, nil, []string{path, "grpo.group_size", "4", "8"}},
		{"temperature", func(c *GRPOTrainerConfig) { c.Train.Rollout.Sampling.Temperature = 0.7 }, nil, []string{"train.rollout.sampling.temperature"}},
		{"no reference state", nil, func(st *checkpoint.State) { delete(st.Extra, ReferenceExtra) }, []string{path, ReferenceExtra}},
		{"no optimizer", nil, func(st *checkpoint.State) { st.AdamM, st.AdamV = nil, nil }, []string{"optimizer state"}},
		{"other trainer", nil, func(st *checkpoint.State) { st.Meta[MetaTrainer] = "ppo" }, []string{"ppo run"}},
		{"plain checkpoint", nil, func(st *checkpoint.State) { delete(st.Meta, MetaTrainer) }, []string{MetaTrainer, "--init"}},
		{"bad state", nil, func(st *checkpoint.State) { st.Meta[MetaState] = "{" }, []string{MetaState}},
		{"bad rng", nil, func(st *checkpoint.State) { st.RNG = []uint64{1} }, []string{"RNG"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := *st
			s.Meta, s.Extra = map[string]string{}, map[string][]float32{}
			for k, v := range st.Meta {
				s.Meta[k] = v
			}
			for k, v := range st.Extra {
				s.Extra[k] = v
			}
			if c.edit != nil {
				c.edit(&s)
			}
			tr := fresh(c.mutate)
			before, _ := paramsToHost(tr.Policy())
			err := tr.Restore(&s, path)
			if err == nil {
				t.Fatal("restored")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			after, _ := paramsToHost(tr.Policy())
			if tr.Steps() != 0 || fmt.Sprint(before[:8]) != fmt.Sprint(after[:8]) {
				t.Errorf("a refused restore changed the trainer")
			}
		})
	}
	// A model of another shape.
	big := toyModel(t, 3)
	cfg := big.Config
	cfg.Channels = 32
	other, err := gpt2.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	gcfg := tr.Config
	g, err := NewGRPOTrainer(nn.GPT2(other), toy, toyPrompts(true), countA(), gcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(st, path); err == nil || !strings.Contains(err.Error(), "channels") || !strings.Contains(err.Error(), path) {
		t.Errorf("model shape mismatch: %v", err)
	}
	// A PPO checkpoint given to the SFT trainer names the kind.
	sft, err := NewSFTTrainer(nn.GPT2(toyModel(t, 3)), toy, toyPrompts(false), SFTConfig{Steps: 2, Batch: 2, Settings: optim.Settings{LR: 1e-3, MinLR: 1e-3}, EOS: toyEOS})
	if err != nil {
		t.Fatal(err)
	}
	if err := sft.Restore(st, path); err == nil || !strings.Contains(err.Error(), "grpo run, not sft") {
		t.Errorf("grpo checkpoint into sft: %v", err)
	}
}

// A summary saved and restored mid-run ends with the same table as one kept in memory.
func TestSummaryJSONRoundTrip(t *testing.T) {
	a := NewSummary()
	rep := func(i int) *StepReport {
		return &StepReport{Action: []Action{Proceed, Skip}[i%2], Metrics: map[string]float64{"reward_mean": float64(i) / 3, "kl_mean": 1 / float64(i+1)}}
	}
	for i := range 3 {
		a.Add(rep(i))
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b := NewSummary("nothing")
	if err := json.Unmarshal(raw, b); err != nil {
		t.Fatal(err)
	}
	a.Add(rep(3))
	b.Add(rep(3))
	var ta, tb strings.Builder
	a.Table(&ta)
	b.Table(&tb)
	if ta.String() != tb.String() || !strings.Contains(ta.String(), "steps 4: 2 applied, 2 skipped") {
		t.Fatalf("restored summary:\n%s\nwant:\n%s", tb.String(), ta.String())
	}
}
