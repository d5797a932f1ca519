package rl

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// chatAlphabet is the toy alphabet with a newline, which the plain renderer ends each reply
// with; its EOS is len(chatAlphabet).
const chatAlphabet = "abcdefgh+=. 0123\n"

// chatTok is charTok over chatAlphabet that also reads EOSText as the EOS.
type chatTok struct{ charTok }

func (c chatTok) Encode(s string) []int32 {
	var out []int32
	for {
		before, after, found := strings.Cut(s, EOSText)
		out = append(out, c.charTok.Encode(before)...)
		if !found {
			return out
		}
		out = append(out, int32(len(c.alphabet)))
		s = after
	}
}

var chatToy = chatTok{charTok{chatAlphabet}}

func chatModel(t testing.TB) *gpt2.Model {
	t.Helper()
	cfg := gpt2.Config{MaxSeqLen: 48, VocabSize: len(chatAlphabet) + 1, PaddedVocabSize: 20, NumLayers: 1, NumHeads: 2, Channels: 16}
	m, err := gpt2.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(7); err != nil {
		t.Fatal(err)
	}
	return m
}

// countEnv rewards each turn with a tenth of its a's, replies "b c" to the first turns and is
// done after the third.
type countEnv struct{}

func (countEnv) Reset(context.Context, json.RawMessage, uint64, int) (env.ResetResult, error) {
	return env.ResetResult{}, nil
}

func (countEnv) Step(_ context.Context, t env.Turn) (env.StepResult, error) {
	return env.StepResult{Messages: []env.Message{{Role: "user", Content: "b c"}},
		Reward: float64(strings.Count(t.Text, "a")) / 10, Done: t.Index == 2}, nil
}

func (countEnv) Close() error { return nil }

func episodeTrainConfig() TrainConfig {
	cfg := DefaultTrainConfig()
	cfg.PromptsPerStep, cfg.Steps = 2, 4
	cfg.Rollout.MaxNewTokens, cfg.Rollout.EOS = 5, len(chatAlphabet)
	lim := episode.DefaultLimits()
	lim.MaxTurns, lim.MaxEpisodeTokens = 4, 40
	cfg.Episodes = &lim
	return cfg
}

func chatEnvironment() Environment {
	return Environment{New: func() (env.Env, error) { return countEnv{}, nil }, Render: episode.NewPlainRenderer(EOSText), Tok: chatToy}
}

func envReward(t testing.TB) *Combined {
	t.Helper()
	r, err := NewCombined(Weighted{Reward: EnvReward{}, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGRPOEpisodes: GRPO on multi-turn episodes trains the sampled tokens only (the
// environment's are off the loss mask and logged as untrained), reports the episode metrics,
// and a seed fixes the run.
func TestGRPOEpisodes(t *testing.T) {
	run := func() (*GRPOTrainer, []*StepReport) {
		cfg := DefaultGRPOTrainerConfig()
		cfg.Train = episodeTrainConfig()
		cfg.GRPO.GroupSize = 3
		tr, err := NewGRPOTrainer(nn.GPT2(chatModel(t)), chatToy, toyPrompts(false), envReward(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetEnvironment(chatEnvironment()); err != nil {
			t.Fatal(err)
		}
		var reps []*StepReport
		for range 2 {
			rep, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, rep)
		}
		return tr, reps
	}
	tr, reps := run()
	m := reps[1].Metrics
	for _, k := range []string{"turns/mean", "turns/max", "tools/call_frequency", "tools/failure_frequency", "episode/stop_reason/done",
		"episode/stop_reason/max_turns", "episode/stop_reason/max_episode_tokens", "episode/env_tokens_mean",
		"retokenization_drift", "loss_token_fraction", "episode/trained_token_fraction", "forced_fraction", "token_alignment"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing", k)
		}
	}
	// The decoder scored each turn after the replies prefilled onto its cache: the same
	// log-probs as the training forward over the whole episode, to float32 rounding.
	if m["logp_mismatch_max"] > 1e-5 {
		t.Errorf("sampling and training log-probs differ by up to %v", m["logp_mismatch_max"])
	}
	if m["turns/mean"] <= 1 || m["episode/env_tokens_mean"] <= 0 || m["episode/trained_token_fraction"] >= 1 || m["token_alignment"] != 1 {
		t.Errorf("metrics %v: want several turns, environment tokens off the loss, aligned tokens", m)
	}
	if reps[0].EnvSeconds <= 0 {
		t.Error("no time in the environment reported")
	}
	for _, c := range reps[0].Completions {
		if len(c.Turns) < 2 || c.StopReason == "" {
			t.Fatalf("completion %+v: want an episode of several turns", c)
		}
		for _, turn := range c.Turns {
			if turn.Trained != (turn.Role == "assistant") {
				t.Errorf("segment %+v: only assistant turns train", turn)
			}
		}
	}
	other, _ := run()
	a, _ := tr.Policy().StateParams()
	b, _ := other.Policy().StateParams()
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same seed trained different weights")
	}
}

// TestEpisodeRolloutMasks: the loss mask is the sampled tokens of trained episodes, a failed
// episode trains nothing, and PPO's turn rewards sit on each turn's last sampled token with
// the other reward terms on the last turn's.
func TestEpisodeRolloutMasks(t *testing.T) {
	ep := &episode.Episode{Prompt: []int32{1, 2}, Tokens: []int32{3, 17, 9, 9, 4, 5, 17},
		Sampled: []bool{true, true, false, false, true, true, true}, LogProb: make([]float32, 7), Trunc: make([]float32, 7),
		Kept: make([]int32, 7), Cutoff: make([]float32, 7), StopReason: episode.StopDone, Return: 1.5,
		Turns: []episode.Turn{{Start: 0, End: 2, Reward: 0.5}, {Start: 4, End: 7, Reward: 1, Text: "de"}}}
	failed := &episode.Episode{StopReason: episode.StopEnvError}
	ro, err := episodeRollout([]Prompt{{}, {}}, []*episode.Episode{ep, failed}, 17, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]float64{{1, 1, 0, 0, 1, 1, 1}, make([]float64, 7)}; !reflect.DeepEqual(ro.Masks.Loss, want) {
		t.Errorf("loss mask %v, want %v", ro.Masks.Loss, want)
	}
	if ro.Texts[0] != "de"+EOSText || ro.GenLens[1] != 1 || len(ro.PromptIDs[1]) != 1 {
		t.Errorf("texts %q, lengths %v, prompts %v", ro.Texts, ro.GenLens, ro.PromptIDs)
	}
	got := turnRewards(ro, []float64{2, 0}, 0.5) // total 2 = 0.5*1.5 + 1.25 from other terms
	want := [][]float64{{0, 0.25, 0, 0, 0, 0, 0.5 + 1.25}, make([]float64, 7)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turn rewards %v, want %v", got, want)
	}
	if c := countedRows(ro); !reflect.DeepEqual(c, []bool{true, false}) {
		t.Errorf("counted %v", c)
	}
}

// TestPPOEpisodes: PPO on multi-turn episodes runs with per-turn rewards and GAE over the
// trained tokens, and a seed fixes the run.
func TestPPOEpisodes(t *testing.T) {
	run := func() ([]float32, *StepReport) {
		cfg := DefaultPPOTrainerConfig()
		cfg.Train = episodeTrainConfig()
		cfg.SamplesPerPrompt, cfg.MiniBatches = 2, 2
		tr, err := NewPPOTrainer(nn.GPT2(chatModel(t)), chatToy, toyPrompts(false), envReward(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetEnvironment(chatEnvironment()); err != nil {
			t.Fatal(err)
		}
		var rep *StepReport
		for range 2 {
			if rep, err = tr.TrainStep(); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := tr.Policy().StateParams()
		return p, rep
	}
	a, rep := run()
	if rep.Metrics["turns/mean"] <= 1 || rep.Action != Proceed {
		t.Errorf("step: %s, metrics %v", rep.Action, rep.Metrics)
	}
	b, _ := run()
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same seed trained different weights")
	}
}

// TestEvaluateEpisodes: a held-out evaluation in an environment runs a greedy episode per
// prompt and scores its return: the mean reward is the mean of the episodes' returns.
func TestEvaluateEpisodes(t *testing.T) {
	m := nn.GPT2(chatModel(t))
	prompts := []Prompt{{Text: "ab="}, {Text: "c="}, {Text: "dd+e="}}
	e := chatEnvironment()
	lim := episodeTrainConfig().Episodes
	res, err := Evaluate(m, chatToy, prompts, envReward(t), EvalConfig{MaxNewTokens: 5, EOS: len(chatAlphabet), Success: 0.1, Env: &e, Episodes: lim})
	if err != nil {
		t.Fatal(err)
	}
	cfg := TrainConfig{Rollout: RolloutConfig{MaxNewTokens: 5, EOS: len(chatAlphabet)}, Episodes: lim}
	eps, _, err := runEpisodesOn(m, &e, cfg.episodeConfig(true), episodeTasks(prompts, 1, 0, 0, true), 0)
	if err != nil {
		t.Fatal(err)
	}
	sum, ok := 0.0, 0
	for _, ep := range eps {
		if len(ep.Turns) < 2 {
			t.Errorf("an episode of %d turns; want several", len(ep.Turns))
		}
		sum += ep.Return
		if ep.Return >= 0.1 {
			ok++
		}
	}
	if res.N != 3 || res.MeanReward != sum/3 || res.Accuracy != float64(ok)/3 {
		t.Errorf("result %+v; want mean reward %v and accuracy %v", res.EvalTask, sum/3, float64(ok)/3)
	}
}

// TestEpisodesOnVulkanWithLoRA: a Llama-family policy with LoRA adapters runs episodes on
// Vulkan, and the training forward scores the turns as the decoder sampled them across the
// environment's replies.
func TestEpisodesOnVulkanWithLoRA(t *testing.T) {
	be := testutil.Vulkan(t)
	cfg := llama.Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2,
		HeadDim: 8, Intermediate: 64, Vocab: len(chatAlphabet) + 1, MaxPositions: 48, RMSNormEps: 1e-6, RopeTheta: 10000,
		QKNorm: true, TieEmbeddings: true, EOS: []int{len(chatAlphabet)}}
	m, err := llama.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(llama.LoRAConfig{Rank: 4, Alpha: 8}, 1); err != nil {
		t.Fatal(err)
	}
	tc := DefaultGRPOTrainerConfig()
	tc.Train = episodeTrainConfig()
	tc.GRPO.GroupSize = 3
	tr, err := NewGRPOTrainer(nn.Llama(m), chatToy, toyPrompts(false), envReward(t), tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetEnvironment(chatEnvironment()); err != nil {
		t.Fatal(err)
	}
	for s := range 2 {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if m := rep.Metrics; m["token_alignment"] != 1 || m["logp_mismatch_max"] > 1e-3 || m["turns/mean"] <= 1 {
			t.Fatalf("step %d: token alignment %v, log-prob mismatch %v, %v turns", s+1, m["token_alignment"], m["logp_mismatch_max"], m["turns/mean"])
		}
	}
}

// TestShareEpisodesExactly: episodes travel between ranks unchanged, the sampler's NoCutoff
// (an infinity JSON cannot write) and every float's bits included.
func TestShareEpisodesExactly(t *testing.T) {
	ep := &episode.Episode{Prompt: []int32{1, 2}, Tokens: []int32{3, 4, 5}, Sampled: []bool{true, true, false},
		LogProb: []float32{-0.1, -2.5e-8, 0}, Trunc: []float32{0, -0.25, 0}, Kept: []int32{3, 50, 0},
		Cutoff: []float32{0.125, sample.NoCutoff, sample.NoCutoff}, Turns: []episode.Turn{{Start: 0, End: 2, Reward: 0.1, Text: "ab", Info: map[string]any{"k": "v"}}},
		Return: 0.1, StopReason: episode.StopDone, Messages: []env.Message{{Role: "user", Content: "q"}}}
	failed := &episode.Episode{StopReason: episode.StopEnvError, Error: "boom"}
	gather := func(b []byte) ([][]byte, error) { return [][]byte{b, b}, nil }
	got, err := shareEpisodes(gather, []*episode.Episode{ep, failed})
	if err != nil {
		t.Fatal(err)
	}
	want := []*episode.Episode{ep, failed, ep, failed}
	failed.LogProb, failed.Trunc, failed.Cutoff = []float32{}, []float32{}, []float32{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shared %+v\nwant %+v", got[0], ep)
	}
}

// TestEpisodesNeedAnEnvironment: a config that asks for episodes and a trainer given no
// environment is an error at the first step, not a silent single-turn run.
func TestEpisodesNeedAnEnvironment(t *testing.T) {
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = episodeTrainConfig()
	cfg.GRPO.GroupSize = 2
	tr, err := NewGRPOTrainer(nn.GPT2(chatModel(t)), chatToy, toyPrompts(false), envReward(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainStep(); err == nil || !strings.Contains(err.Error(), "no environment") {
		t.Errorf("a step without an environment: %v", err)
	}
}
