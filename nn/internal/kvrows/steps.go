package kvrows

import "fmt"

// The three ways a decoder is stepped (all rows, some rows with as many tokens each, some rows
// with their own token lists) come down to one call over rows, their token counts and the
// tokens gathered in row order; these turn each into that call's arguments, reusing scratch.

// All returns the rows of a step over every row, which must share one position.
func (r *Rows) All(tokens []int32, Tq int) ([]int, error) {
	if _, ok := r.Shared(); !ok {
		return nil, fmt.Errorf("decoder Step needs every row at one position; rows at their own go through StepRows")
	}
	if Tq <= 0 || len(tokens) != len(r.pos)*Tq {
		return nil, fmt.Errorf("decoder step got %d tokens for %d rows of %d", len(tokens), len(r.pos), Tq)
	}
	if len(r.all) != len(r.pos) {
		r.all = make([]int, len(r.pos))
		for b := range r.all {
			r.all[b] = b
		}
	}
	return r.all, nil
}

// Even returns the token counts of a step feeding Tq tokens to each of n rows.
func (r *Rows) Even(n, Tq int) []int {
	r.lens = r.lens[:0]
	for range n {
		r.lens = append(r.lens, Tq)
	}
	return r.lens
}

// Ragged returns the token counts and the gathered tokens of a step feeding tokens[i] to rows[i].
func (r *Rows) Ragged(rows []int, tokens [][]int32) ([]int, []int32, error) {
	if len(tokens) != len(rows) {
		return nil, nil, fmt.Errorf("decoder step has %d token lists for %d rows", len(tokens), len(rows))
	}
	r.lens, r.flat = r.lens[:0], r.flat[:0]
	for _, t := range tokens {
		r.lens, r.flat = append(r.lens, len(t)), append(r.flat, t...)
	}
	return r.lens, r.flat, nil
}
