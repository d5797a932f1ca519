package train_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// ExampleTrainer_Run trains a small GPT-2 from text in one call. With RunOptions.Dir the run
// keeps a checkpoint and metrics.jsonl there and resumes with Resume.
func ExampleTrainer_Run() {
	tok, err := tokenizer.GPT2()
	if err != nil {
		panic(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)
	cfg, _ := gpt2.Preset("gpt2-micro")
	m, _ := gpt2.New(cpu.New(), cfg)
	m.InitRandom(1)
	tc := train.DefaultConfig()
	tc.Steps, tc.Batch, tc.Seq, tc.LR, tc.Warmup, tc.ValFraction = 30, 4, 32, 1e-2, 5, 0
	tr, err := train.New(nn.GPT2(m), tc, tok.Encode(text), "the fox")
	if err != nil {
		panic(err)
	}
	var first, last float64
	err = tr.Run(context.Background(), train.RunOptions{OnStep: func(step int, m map[string]float64) error {
		if step == 1 {
			first = m["loss"]
		}
		last = m["loss"]
		return nil
	}})
	fmt.Println(err, last < first/4)
	// Output: <nil> true
}
