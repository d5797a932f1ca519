package rl

import (
	"fmt"
	"strings"
	"testing"

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
			p.Template = []int{Free, Free, strings.IndexByte(toyAlphabet, '.')}
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
	c.Steps, c.PromptsPerStep, c.LR, c.MinLR = 30, 4, 1e-2, 1e-2
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
	tr, err := NewGRPOTrainer(toyModel(t, 3), toy, toyPrompts(true), countA(), cfg)
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
