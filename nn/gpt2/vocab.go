package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/internal/tokenids"
)

// LimitVocab defines the model's distribution over the first n token ids only, those its
// tokenizer has, when vocab_size is larger: the decoder samples among the first n
// (Decoder.VocabSize), and SelectedHead, ForwardLoss and LogProbs take their softmax over the
// first n, as over VocabSize against PaddedVocabSize, so a token the tokenizer lacks is never
// drawn and its logit receives no gradient. n = VocabSize restores the whole vocabulary.
func (m *Model) LimitVocab(n int) error {
	if err := m.tokenVocab.Set(n, m.Config.VocabSize); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}

// TokenVocab is the number of token ids the model's distribution covers: VocabSize, or what
// LimitVocab set.
func (m *Model) TokenVocab() int {
	return m.tokenVocab.Of(m.Config.VocabSize)
}

// checkTargets reports a batch of targets that is not B*T long or that holds an id the model's
// distribution does not cover.
func (m *Model) checkTargets(ids []int32, B, T int) error {
	if err := tokenids.Check("targets", ids, B, T, m.TokenVocab()); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}
