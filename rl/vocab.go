package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn"
)

// LimitVocab defines p's distribution over the first n token ids, those of its tokenizer, when
// its vocabulary is padded past them (Qwen: 151936 rows, 151669 tokens): the rows past n are
// never sampled, and the training log-softmax runs over the same n ids, so the log-probs of
// training are those of sampling (gpt2.Model.LimitVocab, llama.Model.LimitVocab). It returns
// the number of ids of p's vocabulary before the limit.
func LimitVocab(p nn.LM, n int) (int, error) {
	switch m := p.(type) {
	case *nn.GPT2LM:
		return m.Model.Config.VocabSize, m.Model.LimitVocab(n)
	case *nn.LlamaLM:
		return m.Model.Config.Vocab, m.Model.LimitVocab(n)
	}
	return 0, fmt.Errorf("rl: cannot limit the vocabulary of a %T", p)
}
