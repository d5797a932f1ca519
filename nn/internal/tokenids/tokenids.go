// Package tokenids checks the token ids a model is given, for the model packages.
package tokenids

import "fmt"

// Check reports a batch ids that is not B*T long, or its first id outside [0, V); what names
// the argument in the error.
func Check(what string, ids []int32, B, T, V int) error {
	if len(ids) != B*T {
		return fmt.Errorf("%s has %d tokens, want B*T = %d*%d = %d", what, len(ids), B, T, B*T)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("%s[%d] (batch row %d, position %d) is token id %d, outside the vocabulary [0, %d)", what, i, i/T, i%T, id, V)
		}
	}
	return nil
}

// Limit is how many token ids a model's distribution covers: the whole vocabulary (the zero
// Limit), or the first n when the tokenizer has fewer ids than the model has rows.
type Limit int

// Set limits the distribution to the first n of vocab ids; n = vocab restores the whole.
func (l *Limit) Set(n, vocab int) error {
	if n <= 0 || n > vocab {
		return fmt.Errorf("limiting the vocabulary to %d ids: want 1 to vocab_size %d", n, vocab)
	}
	*l = Limit(n)
	return nil
}

// Of is the number of ids covered out of vocab.
func (l Limit) Of(vocab int) int {
	if l > 0 {
		return int(l)
	}
	return vocab
}
