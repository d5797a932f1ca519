package rl

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// charTok is a character tokenizer over a small alphabet; the last id is the EOS.
type charTok struct{ alphabet string }

const toyAlphabet = "abcdefgh+=. 0123"

func (c charTok) Encode(s string) []int32 {
	out := make([]int32, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, int32(strings.IndexByte(c.alphabet, s[i])))
	}
	return out
}

func (c charTok) Decode(ids []int32) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		if int(id) == len(c.alphabet) {
			sb.WriteString(EOSText)
			continue
		}
		if id < 0 || int(id) > len(c.alphabet) {
			return "", fmt.Errorf("token %d", id)
		}
		sb.WriteByte(c.alphabet[id])
	}
	return sb.String(), nil
}

var toy = charTok{toyAlphabet}

const toyEOS = len(toyAlphabet)

func toyModel(t testing.TB, seed uint64) *gpt2.Model {
	t.Helper()
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: toyEOS + 1, PaddedVocabSize: 20, NumLayers: 1, NumHeads: 2, Channels: 16}
	m, err := gpt2.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(seed); err != nil {
		t.Fatal(err)
	}
	return m
}

// toyPrompts cycles over a few prompts; the template forces a "." at completion position 2.
func toyPrompts(withTemplate bool) PromptSource {
	texts := []string{"ab=", "c=", "dd+e=", "f="}
	i := 0
	return PromptFunc(func() (Prompt, error) {
		p := Prompt{Text: texts[i%len(texts)], Answer: "aa.", Meta: Meta{"task": "toy"}}
		if withTemplate {
			p.Template = []int{Unforced, Unforced, strings.IndexByte(toyAlphabet, '.')}
		}
		i++
		return p, nil
	})
}

// countA rewards the share of "a" among the completion's characters (EOS excluded).
func countA() *Combined {
	c, err := NewCombined(Weighted{Reward: RewardFunc{RewardName: "a_share", Fn: func(_, completion string, _ Meta) (float64, error) {
		body, _ := strings.CutSuffix(completion, EOSText)
		if body == "" {
			return 0, nil
		}
		return float64(strings.Count(body, "a")) / float64(len(body)), nil
	}}, Weight: 1})
	if err != nil {
		panic(err)
	}
	return c
}

func toyTrainConfig() TrainConfig {
	c := DefaultTrainConfig()
	c.Steps, c.PromptsPerStep, c.LR, c.MinLR = 30, 4, 5e-3, 5e-3
	c.Rollout = RolloutConfig{Sampling: Sampling{Temperature: 1, TopP: 1}, MaxNewTokens: 4, EOS: toyEOS}
	return c
}

func toyGRPO(t testing.TB, mutate func(*GRPOTrainerConfig)) *GRPOTrainer {
	t.Helper()
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.GRPO.GroupSize = 8
	if mutate != nil {
		mutate(&cfg)
	}
	tr, err := NewGRPOTrainer(nn.GPT2(toyModel(t, 3)), toy, toyPrompts(true), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestGRPORaisesRewardOnEasyTask(t *testing.T) {
	tr := toyGRPO(t, nil)
	var first, last float64
	for s := 0; s < 30; s++ {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Metrics["reward_mean"]
		if s < 5 {
			first += r / 5
		}
		if s >= 25 {
			last += r / 5
		}
	}
	t.Logf("reward %.3f -> %.3f", first, last)
	if last < first+0.3 {
		t.Fatalf("mean reward of the last 5 steps %.3f, first 5 %.3f: want a rise of 0.3", last, first)
	}
}

// Before the first update the reference's log-probs equal the policy's bitwise, so every KL
// estimate is exactly 0; the first inner iteration's ratio is exactly 1; the rollout's tokens
// are the tokens trained on; and the old log-probs equal a separate no-tape forward bitwise.
func TestStepZeroKLAndRatioExact(t *testing.T) {
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) {
		c.GRPO.Beta = 0.1
		c.Train.Mu = 2
	})
	ro, rb, err := tr.drawRollout(tr.Config.GRPO.GroupSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Total) != 32 {
		t.Fatalf("%d rewards, want 4 prompts x 8", len(rb.Total))
	}
	m := map[string]float64{}
	sb, align, err := tr.batchFor(ro, m)
	if err != nil {
		t.Fatal(err)
	}
	if align != 1 {
		t.Fatalf("token alignment %v", align)
	}
	pol, err := sb.evalNoGrad(tr.pol, 1, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sb.evalNoGrad(tr.refm, 1, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pol.Logp {
		for j := range pol.Logp[i] {
			if pol.Logp[i][j] != ref.Logp[i][j] {
				t.Fatalf("row %d pos %d: policy %v, reference %v", i, j, pol.Logp[i][j], ref.Logp[i][j])
			}
		}
	}
	// The recorded forward gives the same bits as the no-tape forward.
	up, err := tr.update(sb, updateSpec{policyGrad: true}, func(cur *seqOut) (*tokenGrads, error) { return &tokenGrads{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	cur := up.cur
	for i := range pol.Logp {
		for j := range pol.Logp[i] {
			if pol.Logp[i][j] != cur.Logp[i][j] {
				t.Fatalf("row %d pos %d: no tape %v, tape %v", i, j, pol.Logp[i][j], cur.Logp[i][j])
			}
		}
	}
	// Sampling-time log-probs agree to float32 rounding.
	mean, mx := LogpMismatch(ro.SampleLogp, pol.Logp, ro.Masks.Response)
	if mx > 1e-4 || mean > 1e-5 {
		t.Fatalf("sampling vs training log-probs: mean %g max %g", mean, mx)
	}

	tr = toyGRPO(t, func(c *GRPOTrainerConfig) {
		c.GRPO.Beta = 0.1
		c.Train.Mu = 1
	})
	rep, err := tr.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kl_mean", "kl_k1_mean", "kl_k2_mean", "kl_k3_mean", "kl_loss", "clipped_fraction"} {
		if v := rep.Metrics[k]; v != 0 {
			t.Errorf("step 1: %s = %v, want exactly 0", k, v)
		}
	}
	for _, k := range []string{"ratio_mean", "ratio_p10", "ratio_p90", "active_fraction", "token_alignment"} {
		if v := rep.Metrics[k]; v != 1 {
			t.Errorf("step 1: %s = %v, want exactly 1", k, v)
		}
	}
	rep, err = tr.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics["kl_mean"] <= 0 {
		t.Errorf("step 2: kl_mean %v, want > 0 after an update", rep.Metrics["kl_mean"])
	}
}

func TestGRPOInnerIterationsMoveTheRatio(t *testing.T) {
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.Mu = 4 })
	rep, err := tr.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics["updates_applied"] != 4 {
		t.Fatalf("updates_applied %v", rep.Metrics["updates_applied"])
	}
	// Averaged over 4 iterations of which the first has ratio 1 everywhere; later ones moved.
	if rep.Metrics["ratio_mean_positive_adv"] <= 1 || rep.Metrics["ratio_mean_negative_adv"] >= 1 {
		t.Fatalf("ratio by advantage sign: positive %v negative %v; the updates should raise the first and lower the second",
			rep.Metrics["ratio_mean_positive_adv"], rep.Metrics["ratio_mean_negative_adv"])
	}
}

func runMetrics(t *testing.T, step func() (*StepReport, error), n int) []map[string]float64 {
	t.Helper()
	var out []map[string]float64
	for range n {
		rep, err := step()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rep.Metrics)
	}
	return out
}

func sameMetrics(t *testing.T, a, b []map[string]float64) {
	t.Helper()
	for s := range a {
		if len(a[s]) != len(b[s]) {
			t.Fatalf("step %d: %d metrics vs %d", s+1, len(a[s]), len(b[s]))
		}
		for k, v := range a[s] {
			if w, ok := b[s][k]; !ok || (v != w && !(math.IsNaN(v) && math.IsNaN(w))) {
				t.Fatalf("step %d: %s = %v in run 1, %v in run 2", s+1, k, v, w)
			}
		}
	}
}

// A fixed seed on the CPU gives identical metrics across two runs.
func TestDeterministicRuns(t *testing.T) {
	grpo := func() []map[string]float64 {
		tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.Beta, c.Train.Mu = 0.04, 2 })
		return runMetrics(t, tr.TrainStep, 4)
	}
	sameMetrics(t, grpo(), grpo())
	ppo := func() []map[string]float64 {
		tr := toyPPO(t, func(c *PPOTrainerConfig) { c.ValueHead.Dropout = 0.1; c.CriticWarmup = 1 })
		return runMetrics(t, tr.TrainStep, 4)
	}
	sameMetrics(t, ppo(), ppo())
}

// Micro-batches give the same step as one pass, up to float32 rounding of a different batch
// shape, and the recorded recomputation matches the first pass bitwise.
func TestMicroBatchesMatchOnePass(t *testing.T) {
	one := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.Beta = 0.04 })
	many := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.Beta, c.Train.MicroBatch = 0.04, 5 })
	for s := 0; s < 3; s++ {
		a, err := one.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		b, err := many.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if b.Metrics["recompute_mismatch"] != 0 {
			t.Fatalf("step %d: %v log-probs differ between the no-tape pass and the recorded one", s+1, b.Metrics["recompute_mismatch"])
		}
		for _, k := range []string{"reward_mean", "loss", "kl_mean", "entropy_mean", "grad_norm"} {
			if d := math.Abs(a.Metrics[k] - b.Metrics[k]); d > 1e-4*(1+math.Abs(a.Metrics[k])) {
				t.Fatalf("step %d: %s %v in one pass, %v in micro-batches", s+1, k, a.Metrics[k], b.Metrics[k])
			}
		}
	}
}

func TestKLCapSkipsAndStops(t *testing.T) {
	for _, action := range []Action{Skip, Stop} {
		tr := toyGRPO(t, func(c *GRPOTrainerConfig) {
			c.GRPO.Beta, c.GRPO.KLHardCap, c.GRPO.KLCapAction = 0.01, 1e-9, action
		})
		rep, err := tr.TrainStep()
		if err != nil || rep.Action != Proceed {
			t.Fatalf("%s: step 1 (KL 0): %v %v", action, rep.Action, err)
		}
		before, _ := paramsToHost(tr.Policy())
		rep, err = tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Action != action || !strings.Contains(rep.Reason, "kl_hard_cap") || len(rep.Warnings) == 0 || rep.Metrics["updates_applied"] != 0 {
			t.Fatalf("%s: step 2: action %v reason %q warnings %q applied %v", action, rep.Action, rep.Reason, rep.Warnings, rep.Metrics["updates_applied"])
		}
		after, _ := paramsToHost(tr.Policy())
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("%s: parameter %d changed by a step past the KL cap", action, i)
			}
		}
		_, err = tr.TrainStep()
		if (action == Stop) != (err != nil) {
			t.Fatalf("%s: step 3 error %v", action, err)
		}
	}
}

func TestReferenceSync(t *testing.T) {
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.GRPO.Beta, c.Train.RefSyncEvery, c.Train.RefMixAlpha = 0.04, 2, 1 })
	for s := 1; s <= 2; s++ {
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := paramsToHost(tr.Policy())
	r, _ := paramsToHost(tr.Reference().Model)
	for i := range p {
		if p[i] != r[i] {
			t.Fatalf("after a full sync parameter %d: policy %v reference %v", i, p[i], r[i])
		}
	}
	// EMA: ref = 0.25*policy + 0.75*ref.
	old := append([]float32(nil), r...)
	if _, err := tr.TrainStep(); err != nil {
		t.Fatal(err)
	}
	p, _ = paramsToHost(tr.Policy())
	if err := tr.Reference().Sync(tr.Policy(), 0.25); err != nil {
		t.Fatal(err)
	}
	r, _ = paramsToHost(tr.Reference().Model)
	for i := range p {
		want := float32(0.25)*p[i] + float32(0.75)*old[i]
		if r[i] != want {
			t.Fatalf("EMA parameter %d: %v, want %v", i, r[i], want)
		}
	}
	if err := tr.Reference().Sync(tr.Policy(), 0); err == nil || !strings.Contains(err.Error(), "ref_mix_alpha") {
		t.Fatalf("alpha 0: %v", err)
	}
}

func toyPPO(t testing.TB, mutate func(*PPOTrainerConfig)) *PPOTrainer {
	t.Helper()
	cfg := DefaultPPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.PromptsPerStep = 16
	cfg.Train.Mu = 2
	if mutate != nil {
		mutate(&cfg)
	}
	tr, err := NewPPOTrainer(nn.GPT2(toyModel(t, 3)), toy, toyPrompts(true), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestPPORaisesRewardAndTrainsTheCritic(t *testing.T) {
	tr := toyPPO(t, func(c *PPOTrainerConfig) { c.CriticWarmup = 3; c.ValueLR = 3e-2 })
	var first, last float64
	policy0, _ := paramsToHost(tr.Policy())
	for s := 0; s < 40; s++ {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if s == 2 {
			p, _ := paramsToHost(tr.Policy())
			for i := range p {
				if p[i] != policy0[i] {
					t.Fatalf("parameter %d moved during the critic warm-up", i)
				}
			}
			if rep.Metrics["critic_warmup"] != 1 || rep.Metrics["vf_loss"] == 0 {
				t.Fatalf("warm-up step: %v", rep.Metrics)
			}
		}
		r := rep.Metrics["reward_mean"]
		if s < 5 {
			first += r / 5
		}
		if s >= 35 {
			last += r / 5
		}
	}
	t.Logf("reward %.3f -> %.3f", first, last)
	if last < first+0.3 {
		t.Fatalf("PPO mean reward of the last 5 steps %.3f, first 5 %.3f: want a rise of 0.3", last, first)
	}
}

// Supervised warm-up learns the toy answers: the answer-only loss falls and greedy evaluation
// then scores every prompt as correct.
func TestSFTThenEvaluate(t *testing.T) {
	m := toyModel(t, 5)
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.LR, cfg.MinLR, cfg.Warmup, cfg.EOS = 60, 8, 1e-2, 1e-3, 5, toyEOS
	tr, err := NewSFTTrainer(nn.GPT2(m), toy, toyPrompts(false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := NewCombined(Weighted{Reward: exactMatch{Field: "answer", RequireEOS: true}, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	var held []Prompt
	src := toyPrompts(false)
	for range 4 {
		p, _ := src.Next()
		p.Meta = Meta{"task": "toy", "answer": p.Answer}
		held = append(held, p)
	}
	ec := EvalConfig{MaxNewTokens: 5, EOS: toyEOS, Success: 1}
	before, err := Evaluate(nn.GPT2(m), toy, held, exact, ec)
	if err != nil {
		t.Fatal(err)
	}
	var first, last SFTStats
	for tr.Step < cfg.Steps {
		s, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if s.Step == 1 {
			first = s
		}
		last = s
	}
	// 8 examples of "aa." + EOS: 4 loss tokens each.
	if first.Tokens != 32 || last.Tokens != 32 {
		t.Fatalf("loss tokens %d, %d; want 32", first.Tokens, last.Tokens)
	}
	if !(first.Loss > 2 && last.Loss < 0.05) {
		t.Fatalf("loss %.3f -> %.3f; want from about ln(17) to near 0", first.Loss, last.Loss)
	}
	after, err := Evaluate(nn.GPT2(m), toy, held, exact, ec)
	if err != nil {
		t.Fatal(err)
	}
	if before.Accuracy != 0 || after.Accuracy != 1 || after.ByTask["toy"].N != 4 || after.Answers[0] != "aa."+EOSText {
		t.Fatalf("accuracy %v -> %v, answers %q", before.Accuracy, after.Accuracy, after.Answers)
	}
}

func TestRewardByTask(t *testing.T) {
	ro := &Rollout{Prompts: []Prompt{{Meta: Meta{"task": "a"}}, {Meta: Meta{"task": "b"}}, {Meta: Meta{"task": "a"}}}}
	m := map[string]float64{}
	rewardByTask(m, ro, []float64{1, 0.5, 0})
	if len(m) != 2 || m["task_reward/a"] != 0.5 || m["task_reward/b"] != 0.5 {
		t.Fatalf("%v", m)
	}
	m = map[string]float64{}
	rewardByTask(m, &Rollout{Prompts: ro.Prompts[:1]}, []float64{1})
	if len(m) != 0 {
		t.Fatalf("one task: %v", m)
	}
}

// Mini-batches update one after another: with one epoch, the first mini-batch sees ratio 1
// and the later ones a moved policy; every row is in exactly one mini-batch per epoch.
func TestPPOMiniBatches(t *testing.T) {
	one := toyPPO(t, func(c *PPOTrainerConfig) { c.Train.Mu = 1; c.Train.LR, c.Train.MinLR = 3e-3, 3e-3 })
	four := toyPPO(t, func(c *PPOTrainerConfig) { c.Train.Mu = 2; c.MiniBatches = 4; c.Train.LR, c.Train.MinLR = 3e-3, 3e-3 })
	a, err := one.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	b, err := four.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["ratio_p10"] != 1 || a.Metrics["ratio_p90"] != 1 {
		t.Fatalf("one mini-batch, one epoch: ratio p10 %v p90 %v, want exactly 1", a.Metrics["ratio_p10"], a.Metrics["ratio_p90"])
	}
	if b.Metrics["ratio_p10"] == 1 && b.Metrics["ratio_p90"] == 1 {
		t.Fatalf("four mini-batches: every ratio is 1, so the updates did not run in sequence")
	}
	if one.opt.Step != 1 || four.opt.Step != 8 {
		t.Fatalf("optimizer updates %d and %d, want 1 and 2 epochs x 4 mini-batches", one.opt.Step, four.opt.Step)
	}
	n := four.Config.Train.PromptsPerStep * four.Config.SamplesPerPrompt
	for k := 0; k < 2; k++ {
		seen := make([]int, n)
		for _, rows := range four.miniBatches(n, k) {
			if len(rows) != n/4 {
				t.Fatalf("mini-batch of %d rows, want %d", len(rows), n/4)
			}
			for _, i := range rows {
				seen[i]++
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("epoch %d: row %d in %d mini-batches", k, i, c)
			}
		}
	}
	if slices.Equal(four.miniBatches(n, 0)[0], four.miniBatches(n, 1)[0]) {
		t.Fatalf("the split does not change between epochs")
	}
	cfg := four.Config
	cfg.MiniBatches = n + 1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "num_mini_batches") {
		t.Fatalf("err %v, want it to name num_mini_batches", err)
	}
}
