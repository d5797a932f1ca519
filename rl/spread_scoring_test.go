package rl

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
)

// batchLength is a BatchReward scoring a completion's length, as an external verifier would: one
// call per batch.
type batchLength struct{ log *[]string }

func (batchLength) Name() string { return "length" }

func (b batchLength) Score(prompt, completion string, meta Meta) (float64, error) {
	s, err := b.ScoreAll([]string{prompt}, []string{completion}, []Meta{meta})
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

func (b batchLength) ScoreAll(prompts, completions []string, _ []Meta) ([]float64, error) {
	out := make([]float64, len(completions))
	for i, c := range completions {
		*b.log = append(*b.log, "length "+prompts[i]+"|"+c)
		out[i] = float64(len(c)) / 7
	}
	return out, nil
}

// loggedRewards are countA's a_share, scored one completion a call, and batchLength; each
// appends "<term> <prompt>|<completion>" to log for every completion it scores.
func loggedRewards(log *[]string) *Combined {
	share := countA().parts[0].Reward
	c, err := NewCombined(Weighted{Reward: RewardFunc{RewardName: "a_share", Fn: func(p, completion string, m Meta) (float64, error) {
		*log = append(*log, "a_share "+p+"|"+completion)
		return share.Score(p, completion, m)
	}}, Weight: 1}, Weighted{Reward: batchLength{log}, Weight: 0.25})
	if err != nil {
		panic(err)
	}
	return c
}

// scoringRun trains the toy model with GRPO spread over c's ranks (one process when c is nil)
// as grpoSpreadRun does, with loggedRewards. It returns a hash of every step's reward metrics
// and of the parameters, and the rewards' calls, sorted.
func scoringRun(t *testing.T, c *mpi.Comm) (string, []string) {
	t.Helper()
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.Train.MicroBatch = grpoSpreadSteps, 5, 4
	cfg.GRPO.GroupSize = 4
	var calls []string
	p := nn.GPT2(toyModel(t, 5))
	tr, err := NewGRPOTrainer(p, toy, toyPrompts(false), loggedRewards(&calls), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetComm(c); err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	for range grpoSpreadSteps {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range slices.Sorted(maps.Keys(rep.Metrics)) {
			if k == "loss" || strings.HasPrefix(k, "reward") {
				fmt.Fprintf(h, "%s=%016x;", k, math.Float64bits(rep.Metrics[k]))
			}
		}
	}
	params, err := paramsToHost(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range params {
		fmt.Fprintf(h, "%08x", math.Float32bits(v))
	}
	slices.Sort(calls)
	return fmt.Sprintf("%016x", h.Sum64()), calls
}

// Spread over 2 ranks, each rank scores only the groups it sampled: the two ranks' reward calls
// together are one process's, each completion scored once by each term, and every rank's reward
// metrics (rewards/<term>/mean and std among them) and parameters are one process's, bit for bit.
func TestSpreadScoresEachCompletionOnce(t *testing.T) {
	testutil.SkipInRankJob(t)
	want, wantCalls := scoringRun(t, nil)
	if n := 2 * grpoSpreadSteps * 5 * 4; len(wantCalls) != n {
		t.Fatalf("one process made %d reward calls, want %d (2 terms x %d steps x 20 completions)", len(wantCalls), n, grpoSpreadSteps)
	}
	for _, l := range testutil.MPILaunchers(t) {
		var calls []string
		for r, got := range testutil.RunRanks(t, l, 2, "TestSpreadScoresRank") {
			hash, mine, _ := strings.Cut(got, "\n")
			if hash != want {
				t.Errorf("%s rank %d: hash %s, one process %s", l.Name, r, hash, want)
			}
			// Rank 0 holds 3 of the 5 groups, rank 1 the other 2.
			lines := strings.Split(mine, "\n")
			if wantN := 2 * grpoSpreadSteps * 4 * []int{3, 2}[r]; len(lines) != wantN {
				t.Errorf("%s rank %d: %d reward calls, want %d", l.Name, r, len(lines), wantN)
			}
			calls = append(calls, lines...)
		}
		slices.Sort(calls)
		if !slices.Equal(calls, wantCalls) {
			t.Errorf("%s: the ranks' reward calls are not one process's:\n%q\nwant\n%q", l.Name, calls, wantCalls)
		}
	}
}

// TestSpreadScoresRank is one rank of TestSpreadScoresEachCompletionOnce's jobs: its hash, then
// its reward calls, a line each.
func TestSpreadScoresRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestSpreadScoresEachCompletionOnce")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hash, calls := scoringRun(t, c)
	testutil.WriteRankResult(t, c.Rank(), hash+"\n"+strings.Join(calls, "\n"))
}

// failingRun is scoringRun's first step with a reward that fails on the prompt "f=" (group 3,
// which the second of 2 ranks samples): it returns the step's error.
func failingRun(t *testing.T, c *mpi.Comm) string {
	t.Helper()
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.PromptsPerStep, cfg.Train.MicroBatch, cfg.GRPO.GroupSize = 5, 4, 4
	r, err := NewCombined(Weighted{Reward: RewardFunc{RewardName: "picky", Fn: func(p, _ string, _ Meta) (float64, error) {
		if p == "f=" {
			return 0, fmt.Errorf("cannot score %q", p)
		}
		return 1, nil
	}}, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewGRPOTrainer(nn.GPT2(toyModel(t, 5)), toy, toyPrompts(false), r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetComm(c); err != nil {
		t.Fatal(err)
	}
	_, err = tr.TrainStep()
	if err == nil {
		t.Fatal("a failing reward: the step went on")
	}
	return err.Error()
}

// A reward that fails on one rank's rows fails the step on every rank, naming the rank and the
// row as one process names it, rather than leaving the others waiting.
func TestSpreadScoringErrorReachesEveryRank(t *testing.T) {
	testutil.SkipInRankJob(t)
	const row = `reward "picky", row 12: cannot score "f="`
	if got := failingRun(t, nil); !strings.Contains(got, row) {
		t.Fatalf("one process: %s, want %s", got, row)
	}
	for _, l := range testutil.MPILaunchers(t) {
		got := testutil.RunRanks(t, l, 2, "TestSpreadScoringErrorRank")
		if !strings.Contains(got[0], "rank 1: "+row) {
			t.Errorf("%s rank 0: %s, want rank 1's %s", l.Name, got[0], row)
		}
		if !strings.Contains(got[1], row) {
			t.Errorf("%s rank 1: %s, want %s", l.Name, got[1], row)
		}
	}
}

// TestSpreadScoringErrorRank is one rank of TestSpreadScoringErrorReachesEveryRank's jobs.
func TestSpreadScoringErrorRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestSpreadScoringErrorReachesEveryRank")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.WriteRankResult(t, c.Rank(), failingRun(t, c))
}

// evalRun evaluates the toy model on 5 prompts, greedily and 2 samples each, scoring over c's
// ranks (one process when c is nil), with loggedRewards. It returns a hash of the result
// (every reward's bits) and the rewards' calls, sorted.
func evalRun(t *testing.T, c *mpi.Comm) (string, []string) {
	t.Helper()
	src := toyPrompts(false)
	prompts := make([]Prompt, 5)
	for i := range prompts {
		prompts[i], _ = src.Next()
	}
	var calls []string
	cfg := EvalConfig{MaxNewTokens: 4, EOS: toyEOS, Success: 0.5, Samples: 2, Sampling: Sampling{Temperature: 1, TopP: 1}, Seed: 3, Comm: c}
	res, err := Evaluate(nn.GPT2(toyModel(t, 5)), toy, prompts, loggedRewards(&calls), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%016x %016x %016x;", math.Float64bits(res.Accuracy), math.Float64bits(res.MeanReward), math.Float64bits(res.SampledAccuracy))
	for _, r := range res.Rewards {
		fmt.Fprintf(h, "%016x", math.Float64bits(r))
	}
	slices.Sort(calls)
	return fmt.Sprintf("%016x", h.Sum64()), calls
}

// Evaluate over 2 ranks scores each answer once over both and gives each rank one process's
// result, bit for bit.
func TestEvaluateOverRanksScoresEachAnswerOnce(t *testing.T) {
	testutil.SkipInRankJob(t)
	want, wantCalls := evalRun(t, nil)
	if n := 2 * 5 * 3; len(wantCalls) != n {
		t.Fatalf("one process made %d reward calls, want %d (2 terms x 5 prompts x (1 greedy + 2 sampled))", len(wantCalls), n)
	}
	for _, l := range testutil.MPILaunchers(t) {
		var calls []string
		for r, got := range testutil.RunRanks(t, l, 2, "TestEvaluateOverRanksRank") {
			hash, mine, _ := strings.Cut(got, "\n")
			if hash != want {
				t.Errorf("%s rank %d: hash %s, one process %s", l.Name, r, hash, want)
			}
			// Greedy: rank 0 scores 3 of the 5 answers, rank 1 two; sampled: 5 of 10 each.
			lines := strings.Split(mine, "\n")
			if wantN := 2 * ([]int{3, 2}[r] + 5); len(lines) != wantN {
				t.Errorf("%s rank %d: %d reward calls, want %d", l.Name, r, len(lines), wantN)
			}
			calls = append(calls, lines...)
		}
		slices.Sort(calls)
		if !slices.Equal(calls, wantCalls) {
			t.Errorf("%s: the ranks' reward calls are not one process's:\n%q\nwant\n%q", l.Name, calls, wantCalls)
		}
	}
}

// TestEvaluateOverRanksRank is one rank of TestEvaluateOverRanksScoresEachAnswerOnce's jobs.
func TestEvaluateOverRanksRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestEvaluateOverRanksScoresEachAnswerOnce")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hash, calls := evalRun(t, c)
	testutil.WriteRankResult(t, c.Rank(), hash+"\n"+strings.Join(calls, "\n"))
}
