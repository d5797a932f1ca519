package rl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// Example_dataset trains with GRPO on prompts from a JSONL file, scored by a reward function
// that reads the file's "answer" field, in one call. A Qwen or Llama model from a Hugging Face
// directory goes in the same place as nn.Llama(m), with its tokenizer from nn/hftok.
func Example_dataset() {
	const alphabet = letters("abcdefgh=")
	path := filepath.Join(os.TempDir(), "letters.jsonl")
	os.WriteFile(path, []byte("{\"prompt\": \"bc=\", \"answer\": \"a\"}\n{\"prompt\": \"de=\", \"answer\": \"a\"}\n"), 0o644)
	defer os.Remove(path)
	data, err := tasks.LoadDataset(path, tasks.DatasetOptions{})
	if err != nil {
		panic(err)
	}
	list, _ := tasks.NewList(data, true, 1)
	prompts := tasks.RLSource(list, tasks.EncoderOf(alphabet.Encode))
	share := rl.RewardFunc{RewardName: "answer_share", Fn: func(_, completion string, meta rl.Meta) (float64, error) {
		return float64(strings.Count(completion, meta["answer"])) / 4, nil
	}}
	reward, _ := rl.NewCombined(rl.Weighted{Reward: share, Weight: 1})
	m, _ := gpt2.New(cpu.NewWithThreads(1), gpt2.Config{MaxSeqLen: 16, VocabSize: len(alphabet) + 1, PaddedVocabSize: 16, NumLayers: 1, NumHeads: 2, Channels: 16})
	m.InitRandom(1)
	cfg := rl.DefaultGRPOTrainerConfig()
	cfg.Train.Steps, cfg.Train.PromptsPerStep, cfg.Train.LR, cfg.Train.MinLR, cfg.GRPO.GroupSize = 40, 4, 5e-3, 5e-3, 8
	cfg.Train.Rollout = rl.RolloutConfig{Sampling: rl.Sampling{Temperature: 1, TopP: 1}, MaxNewTokens: 4, EOS: len(alphabet)}
	tr, _ := rl.NewGRPOTrainer(nn.GPT2(m), alphabet, prompts, reward, cfg)
	var last float64
	err = tr.Run(context.Background(), rl.RunOptions{OnStep: func(_ int, m map[string]float64) error {
		last = m["reward"]
		return nil
	}})
	fmt.Println(err, last > 0.5)
	// Output: <nil> true
}
