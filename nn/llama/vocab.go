package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/internal/tokenids"
)

// LimitVocab defines the model's distribution over the first n token ids only, those its
// tokenizer has, when vocab_size pads the embedding past them (Qwen: 151936 rows, 151669
// tokens). As llm.c's V against its padded Vp, the rows past n stay in the weights and the
// logits, but the decoder samples among the first n (Decoder.VocabSize), and SelectedHead and
// ForwardLoss take their softmax over the first n: a padding id is never drawn, the log-probs
// of training are those of sampling, and the padding logits receive no gradient.
// n = vocab_size restores the whole vocabulary.
func (m *Model) LimitVocab(n int) error {
	if err := m.tokenVocab.Set(n, m.Config.Vocab); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// TokenVocab is the number of token ids the model's distribution covers: vocab_size, or what
// LimitVocab set.
func (m *Model) TokenVocab() int {
	return m.tokenVocab.Of(m.Config.Vocab)
}

// checkTargets reports a batch of targets that is not B*T long or that holds an id the model's
// distribution does not cover.
func (m *Model) checkTargets(ids []int32, B, T int) error {
	if err := tokenids.Check("targets", ids, B, T, m.TokenVocab()); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}
