package rl

import (
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
)

// grpoSpreadSteps is how many steps the data-parallel comparison runs.
const grpoSpreadSteps = 3

// grpoSpreadRun trains the toy model with GRPO spread over c's ranks (one process when c is
// nil; through TrainConfig.Spread alone when viaConfig is set): 5 groups of 4 over 5 micro-batches of 4 rows, a KL penalty (so the reference is
// evaluated spread too) and two updates per batch. It returns a hash of the parameters and of
// every step's metrics, and the last step's report.
func grpoSpreadRun(t *testing.T, c *mpi.Comm, viaConfig bool) (string, *StepReport, *GRPOTrainer) {
	t.Helper()
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.Train.Mu, cfg.Train.MicroBatch = grpoSpreadSteps, 5, 2, 4
	cfg.Train.Rollout.Sampling.TopK = 8
	cfg.GRPO.GroupSize, cfg.GRPO.Beta = 4, 0.05
	cfg.Train.Spread = viaConfig
	p := nn.GPT2(toyModel(t, 5))
	tr, err := NewGRPOTrainer(p, toy, toyPrompts(false), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !viaConfig {
		if err := tr.SetComm(c); err != nil {
			t.Fatal(err)
		}
	}
	h := fnv.New64a()
	var rep *StepReport
	for range grpoSpreadSteps {
		if rep, err = tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"loss", "reward_mean", "kl_mean", "grad_norm", "recompute_mismatch", "num_tokens"} {
			fmt.Fprintf(h, "%s=%016x;", k, math.Float64bits(rep.Metrics[k]))
		}
		for _, cp := range rep.Completions {
			fmt.Fprintf(h, "%q;", cp.Completion)
		}
	}
	params, err := paramsToHost(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range params {
		fmt.Fprintf(h, "%08x", math.Float32bits(v))
	}
	return fmt.Sprintf("%016x", h.Sum64()), rep, tr
}

// GRPO spread over 1, 2 and 3 ranks of each installed MPI (3 ranks sample 2, 2 and 1 of the 5
// groups and compute 2, 2 and 1 of the 5 micro-batches) gives every rank the completions,
// metrics and parameters of one process, bit for bit.
func TestGRPOSpreadIsBitwiseEqual(t *testing.T) {
	testutil.SkipInRankJob(t)
	want, rep, _ := grpoSpreadRun(t, nil, false)
	if got, _, _ := grpoSpreadRun(t, nil, true); got != want {
		t.Errorf("a trainer built with Spread: hash %s, after SetComm(nil) %s", got, want)
	}
	if rep.Metrics["kl_mean"] == 0 || rep.Metrics["updates_applied"] != 2 || len(rep.Completions) != 20 {
		t.Fatalf("the run does not exercise the reference and both updates: %v, %d completions", rep.Metrics, len(rep.Completions))
	}
	testutil.SameOnEveryRank(t, "TestGRPOSpreadRank", want, 1, 2, 3)
}

// ppoSpreadRun is grpoSpreadRun for PPO: 6 prompts of 2 samples in 2 mini-batches of 3
// micro-batches of 2 rows, two epochs, value dropout, an adaptive KL controller and a critic
// warm-up step in which only the value head learns.
func ppoSpreadRun(t *testing.T, c *mpi.Comm) (string, *StepReport) {
	t.Helper()
	cfg := DefaultPPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.Train.Mu, cfg.Train.MicroBatch = grpoSpreadSteps, 6, 2, 2
	cfg.KLControl = KLControlConfig{Kind: "adaptive", InitCoef: 0.1, Target: 0.01, Horizon: 50}
	cfg.ValueHead.Dropout, cfg.ValueHead.Init, cfg.ValueHead.InitValue = 0.1, "random", 0.05
	cfg.CriticWarmup, cfg.ValueLR, cfg.SamplesPerPrompt, cfg.MiniBatches = 1, 1e-2, 2, 2
	p := nn.GPT2(toyModel(t, 5))
	tr, err := NewPPOTrainer(p, toy, toyPrompts(false), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetComm(c); err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	var rep *StepReport
	for range grpoSpreadSteps {
		if rep, err = tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"loss", "vf_loss", "reward_mean", "kl_coef", "grad_norm", "recompute_mismatch", "critic_warmup"} {
			fmt.Fprintf(h, "%s=%016x;", k, math.Float64bits(rep.Metrics[k]))
		}
	}
	params, err := paramsToHost(p)
	if err != nil {
		t.Fatal(err)
	}
	head, err := tr.Value.ParamsToHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(params, head...) {
		fmt.Fprintf(h, "%08x", math.Float32bits(v))
	}
	return fmt.Sprintf("%016x", h.Sum64()), rep
}

// PPO spread over 1, 2 and 3 ranks gives every rank the metrics, policy and value head of one
// process, bit for bit.
func TestPPOSpreadIsBitwiseEqual(t *testing.T) {
	testutil.SkipInRankJob(t)
	want, rep := ppoSpreadRun(t, nil)
	if rep.Metrics["kl_coef"] == 0.1 || rep.Metrics["critic_warmup"] != 0 || !(rep.Metrics["vf_loss"] > 0) {
		t.Fatalf("the run does not exercise the KL controller or the policy's updates: %v", rep.Metrics)
	}
	testutil.SameOnEveryRank(t, "TestPPOSpreadRank", want, 1, 2, 3)
}

// TestPPOSpreadRank is one rank of TestPPOSpreadIsBitwiseEqual's jobs.
func TestPPOSpreadRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestPPOSpreadIsBitwiseEqual")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, _ := ppoSpreadRun(t, c)
	testutil.WriteRankResult(t, c.Rank(), got)
}

// TestGRPOSpreadRank is one rank of TestGRPOSpreadIsBitwiseEqual's jobs.
func TestGRPOSpreadRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestGRPOSpreadIsBitwiseEqual")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, _, tr := grpoSpreadRun(t, c, false)
	if err := tr.CheckReplicas(); err != nil {
		t.Fatal(err)
	}
	if c.Size() > 1 { // the last rank's policy drifts: every rank hears which
		if c.Rank() == c.Size()-1 {
			p, _ := paramsToHost(tr.policy)
			p[0] += 1e-3
			if err := setParams(tr.policy, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.CheckReplicas(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ranks [%d]", c.Size()-1)) {
			t.Errorf("a drifted rank: %v", err)
		}
	}
	testutil.WriteRankResult(t, c.Rank(), got)
}

// Spread in one process, the trainer still learns: the mean reward rises on the toy task as it
// does unspread.
func TestGRPOSpreadLearns(t *testing.T) {
	tr := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.MicroBatch = 8 })
	if err := tr.SetComm(nil); err != nil {
		t.Fatal(err)
	}
	var first, last float64
	for s := range 30 {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if s < 5 {
			first += rep.Metrics["reward_mean"] / 5
		}
		if s >= 25 {
			last += rep.Metrics["reward_mean"] / 5
		}
	}
	if !(last > first+0.1) {
		t.Errorf("mean reward %.3f over the first 5 steps, %.3f over the last 5: want a rise of 0.1", first, last)
	}
}
