package rl_test

import (
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// letters is a character tokenizer: one id per letter of the alphabet, and the next id is the
// end of sequence.
type letters string

func (l letters) Encode(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range s {
		ids[i] = int32(strings.IndexByte(string(l), s[i]))
	}
	return ids
}

func (l letters) Decode(ids []int32) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		if int(id) >= len(l) {
			return "", fmt.Errorf("token %d is not a letter", id)
		}
		sb.WriteByte(l[id])
	}
	return sb.String(), nil
}

// Example trains a tiny GPT-2 with GRPO to answer with the letter "a", scored by a custom
// reward function. Real runs load a model (nn/load), use the GPT-2 tokenizer (nn/gpt2/tokenizer)
// and draw prompts from rl/tasks.
func Example() {
	const alphabet = letters("abcdefgh=")
	eos := len(alphabet)
	m, err := gpt2.New(cpu.NewWithThreads(1), gpt2.Config{MaxSeqLen: 16, VocabSize: eos + 1, PaddedVocabSize: 16,
		NumLayers: 1, NumHeads: 2, Channels: 16})
	if err != nil {
		panic(err)
	}
	if err := m.InitRandom(1); err != nil {
		panic(err)
	}
	// The reward: the share of "a" among the completion's letters (EOS not counted).
	share := rl.RewardFunc{RewardName: "share_of_a", Fn: func(prompt, completion string, meta rl.Meta) (float64, error) {
		body, _ := strings.CutSuffix(completion, rl.EOSText)
		if body == "" {
			return 0, nil
		}
		return float64(strings.Count(body, "a")) / float64(len(body)), nil
	}}
	reward, err := rl.NewCombined(rl.Weighted{Reward: share, Weight: 1})
	if err != nil {
		panic(err)
	}
	prompts := []string{"bc=", "d=", "ef=", "gh="}
	n := 0
	source := rl.PromptFunc(func() (rl.Prompt, error) {
		n++
		return rl.Prompt{Text: prompts[n%len(prompts)]}, nil
	})

	cfg := rl.DefaultGRPOTrainerConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep = 40, 4
	cfg.Train.LR, cfg.Train.MinLR = 5e-3, 5e-3
	cfg.Train.Rollout = rl.RolloutConfig{Sampling: rl.Sampling{Temperature: 1, TopP: 1}, MaxNewTokens: 4, EOS: eos}
	cfg.GRPO.GroupSize = 8
	trainer, err := rl.NewGRPOTrainer(nn.GPT2(m), alphabet, source, reward, cfg)
	if err != nil {
		panic(err)
	}
	var first, last float64
	for trainer.Steps() < cfg.Train.Steps {
		rep, err := trainer.TrainStep()
		if err != nil {
			panic(err)
		}
		if rep.Step == 1 {
			first = rep.Metrics["reward_mean"]
		}
		last = rep.Metrics["reward_mean"]
	}
	fmt.Printf("mean reward below 0.3 at the start: %v, above 0.8 after %d steps: %v\n", first < 0.3, trainer.Steps(), last > 0.8)
	// Output: mean reward below 0.3 at the start: true, above 0.8 after 40 steps: true
}
