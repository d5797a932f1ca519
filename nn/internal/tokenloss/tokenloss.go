// Package tokenloss averages per-token losses the one way every model and trainer reports them.
//
// A loss then means the same bits whichever family computed it.
package tokenloss

// Mean averages per-token losses on the host in row order, summed in float32 as llm.c does;
// the order and precision are part of the result, which checkpoints and goldens record.
func Mean(losses []float32) float32 {
	var sum float32
	for _, l := range losses {
		sum += l
	}
	return sum / float32(len(losses))
}
