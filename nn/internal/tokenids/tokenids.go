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
