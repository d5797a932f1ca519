package rl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// chatLetters is letters that also reads rl.EOSText, which a reply after a cut turn opens
// with, as the end of sequence.
type chatLetters struct{ letters }

func (l chatLetters) Encode(s string) []int32 {
	var ids []int32
	for {
		before, after, found := strings.Cut(s, rl.EOSText)
		ids = append(ids, l.letters.Encode(before)...)
		if !found {
			return ids
		}
		ids = append(ids, int32(len(l.letters)))
		s = after
	}
}

// twoTurns is an environment of two turns, each rewarded with its share of "a"; the first
// is answered "b".
type twoTurns struct{}

func (twoTurns) Reset(context.Context, json.RawMessage, uint64, int) (env.ResetResult, error) {
	return env.ResetResult{}, nil
}

func (twoTurns) Step(_ context.Context, t env.Turn) (env.StepResult, error) {
	share := float64(strings.Count(t.Text, "a")) / float64(max(len(t.Text), 1))
	return env.StepResult{Messages: []env.Message{{Role: "user", Content: "b"}}, Reward: share, Done: t.Index == 1}, nil
}

func (twoTurns) Close() error { return nil }

// ExampleGRPOTrainer_SetEnvironment trains a tiny GPT-2 on episodes of two turns in an
// environment written in Go; the episode's return is the reward term "env". A model with a
// chat template renders with episode.NewChatRenderer instead, and the built-in environments
// come from env.Lookup.
func ExampleGRPOTrainer_SetEnvironment() {
	tok := chatLetters{letters("abcdefgh=\n")}
	eos := len(tok.letters)
	m, _ := gpt2.New(cpu.NewWithThreads(1), gpt2.Config{MaxSeqLen: 32, VocabSize: eos + 1, PaddedVocabSize: 16, NumLayers: 1, NumHeads: 2, Channels: 16})
	_ = m.InitRandom(1)
	reward, _ := rl.NewCombined(rl.Weighted{Reward: rl.EnvReward{}, Weight: 1})
	prompts := rl.PromptFunc(func() (rl.Prompt, error) { return rl.Prompt{Text: "cd="}, nil })

	cfg := rl.DefaultGRPOTrainerConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.GRPO.GroupSize = 30, 2, 8
	cfg.Train.LR, cfg.Train.MinLR = 5e-3, 5e-3
	cfg.Train.Rollout = rl.RolloutConfig{Sampling: rl.Sampling{Temperature: 1, TopP: 1}, MaxNewTokens: 4, EOS: eos}
	limits := episode.DefaultLimits()
	cfg.Train.Episodes = &limits
	trainer, err := rl.NewGRPOTrainer(nn.GPT2(m), tok, prompts, reward, cfg)
	if err != nil {
		panic(err)
	}
	err = trainer.SetEnvironment(rl.Environment{New: func() (env.Env, error) { return twoTurns{}, nil },
		Render: episode.NewPlainRenderer(rl.EOSText), Tok: tok})
	if err != nil {
		panic(err)
	}
	var first, last *rl.StepReport
	for trainer.Steps() < cfg.Train.Steps {
		rep, err := trainer.TrainStep()
		if err != nil {
			panic(err)
		}
		if first == nil {
			first = rep
		}
		last = rep
	}
	fmt.Printf("turns per episode: %v; return below 0.6 at the start: %v, above 1.4 after %d steps: %v\n",
		last.Metrics["turns/mean"], first.Metrics["reward_mean"] < 0.6, trainer.Steps(), last.Metrics["reward_mean"] > 1.4)
	// Output: turns per episode: 2; return below 0.6 at the start: true, above 1.4 after 30 steps: true
}
