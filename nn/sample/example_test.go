package sample_test

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// ExampleGenerate continues two prompts at temperature 0.8 with a KV cache; the seed fixes the
// tokens. Real programs load a trained model with nn/load and tokenise with nn/gpt2/tokenizer.
func ExampleGenerate() {
	m, err := gpt2.New(cpu.New(), gpt2.Config{MaxSeqLen: 32, VocabSize: 50, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 2, Channels: 16})
	if err != nil {
		panic(err)
	}
	if err := m.InitRandom(1); err != nil {
		panic(err)
	}
	d, err := m.NewDecoder(2, 32)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	opt := sample.DefaultOptions()
	opt.Temperature = 0.8
	res, err := sample.Generate(d, [][]int32{{1, 2, 3}, {4, 5, 6}}, 8, -1, opt, sample.NewRNG(42))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Tokens[0]), len(res.Tokens[1]))
	// Output: 8 8
}
