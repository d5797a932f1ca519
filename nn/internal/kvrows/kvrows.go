// Package kvrows tracks the rows of a key/value-cache decoder, for the model packages' decoders.
//
// [Rows], made by [New], keeps the position of each row: how many of its cache positions are
// filled. [Rows.Plan] checks a step that feeds new tokens to some rows and lays it out as a
// [Plan] of one [Span] per row, grouped into a [Run] of consecutive rows at one position for
// each attention call; [Rows.Advance] moves the rows once the step ran. [Rows.Fork] and
// [Rows.ForkPrefix] copy a row's cache into other rows.
package kvrows

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Rows is the position of each of a decoder's rows: how many of its cache positions are filled.
type Rows struct {
	limit int
	pos   []int
	seen  []bool // scratch for the duplicate check
	plan  Plan   // reused by every step, so that decoding allocates nothing

	all  []int   // 0..Len()-1, the rows a step over all rows feeds
	lens []int   // scratch for a step's token counts
	flat []int32 // scratch for a ragged step's gathered tokens
}

// New tracks B rows of up to limit positions, all empty.
func New(B, limit int) *Rows {
	return &Rows{limit: limit, pos: make([]int, B), seen: make([]bool, B)}
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.pos) }

// Pos is row's position. It panics on a row outside [0, Len()), as indexing does.
func (r *Rows) Pos(row int) int {
	if row < 0 || row >= len(r.pos) {
		panic(fmt.Sprintf("decoder row %d outside [0, %d)", row, len(r.pos)))
	}
	return r.pos[row]
}

// Shared is the position all rows share, and false when they differ.
func (r *Rows) Shared() (int, bool) {
	for _, p := range r.pos {
		if p != r.pos[0] {
			return 0, false
		}
	}
	return r.pos[0], true
}

// ResetAll empties every row.
func (r *Rows) ResetAll() { clear(r.pos) }

// Reset empties one row.
func (r *Rows) Reset(row int) error {
	if err := r.check("row", row); err != nil {
		return err
	}
	r.pos[row] = 0
	return nil
}

func (r *Rows) check(what string, row int) error {
	if row < 0 || row >= len(r.pos) {
		return fmt.Errorf("decoder %s %d outside the decoder's rows [0, %d)", what, row, len(r.pos))
	}
	return nil
}

// distinct checks that rows are in range and name no row twice.
func (r *Rows) distinct(what string, rows []int) error {
	defer func() {
		for _, row := range rows {
			if row >= 0 && row < len(r.seen) {
				r.seen[row] = false
			}
		}
	}()
	for i, row := range rows {
		if row < 0 || row >= len(r.pos) {
			return fmt.Errorf("decoder %s[%d]: row %d outside the decoder's rows [0, %d)", what, i, row, len(r.pos))
		}
		if r.seen[row] {
			return fmt.Errorf("decoder %s names row %d twice", what, row)
		}
		r.seen[row] = true
	}
	return nil
}

// Span is one row's part of a step: its N new tokens start at Off in the step's gathered
// tokens and go to cache positions Pos..Pos+N-1.
type Span struct{ Row, Pos, Off, N int }

// Run is Count spans, from First on, of consecutive rows at one position feeding as many
// tokens each: the attention of a run is one call on the cache rows Row..Row+Count-1.
type Run struct {
	First, Count int // spans
	Row, Pos     int // the first row, and the position all its rows share
	N, Off       int // tokens per row, and where the run's tokens start in the step's
}

// Plan is a checked step: the spans in the order the rows were listed, and their runs.
type Plan struct {
	Spans  []Span
	Runs   []Run
	Tokens int // gathered tokens, the sum of the spans' N
}

// Plan checks a step feeding lens[i] tokens to rows[i] (tokens gathered row after row, ids in
// [0, vocab)) and lays it out, in storage the next Plan reuses. It changes no position;
// Advance does, once the step ran.
func (r *Rows) Plan(rows, lens []int, tokens []int32, vocab int) (*Plan, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("decoder step lists no rows")
	}
	if len(lens) != len(rows) {
		return nil, fmt.Errorf("decoder step has %d token lists for %d rows", len(lens), len(rows))
	}
	if err := r.distinct("step", rows); err != nil {
		return nil, err
	}
	p := &r.plan
	p.Spans, p.Runs, p.Tokens = p.Spans[:0], p.Runs[:0], 0
	for i, row := range rows {
		n, pos := lens[i], r.pos[row]
		if n <= 0 {
			return nil, fmt.Errorf("decoder step feeds %d tokens to row %d; want at least 1", n, row)
		}
		if pos+n > r.limit {
			return nil, fmt.Errorf("decoder row %d holds %d positions; %d + %d would exceed it", row, r.limit, pos, n)
		}
		p.Spans = append(p.Spans, Span{Row: row, Pos: pos, Off: p.Tokens, N: n})
		p.Tokens += n
	}
	if len(tokens) != p.Tokens {
		return nil, fmt.Errorf("decoder step got %d tokens for rows feeding %d", len(tokens), p.Tokens)
	}
	for _, s := range p.Spans {
		for t, id := range tokens[s.Off : s.Off+s.N] {
			if id < 0 || int(id) >= vocab {
				return nil, fmt.Errorf("decoder token %d of row %d (position %d) is id %d, outside the vocabulary [0, %d)", t, s.Row, s.Pos+t, id, vocab)
			}
		}
	}
	for i, s := range p.Spans {
		if k := len(p.Runs) - 1; k >= 0 {
			last := &p.Runs[k]
			if s.Row == last.Row+last.Count && s.Pos == last.Pos && s.N == last.N {
				last.Count++
				continue
			}
		}
		p.Runs = append(p.Runs, Run{First: i, Count: 1, Row: s.Row, Pos: s.Pos, N: s.N, Off: s.Off})
	}
	return p, nil
}

// Advance moves each planned row past its new tokens.
func (r *Rows) Advance(p *Plan) {
	for _, s := range p.Spans {
		r.pos[s.Row] += s.N
	}
}

// Fork copies the first Pos(src) positions of src's cache rows into each dst row of every
// cache (per layer (rows, limit, width) tensors) and gives them src's position. Positions of a
// dst row past src's keep stale values that attention never reads: it reads 0..pos only.
func (r *Rows) Fork(be tensor.Backend, caches []*tensor.Tensor, width, src int, dst []int) error {
	if err := r.check("fork source row", src); err != nil {
		return err
	}
	return r.ForkPrefix(be, caches, width, src, r.pos[src], dst)
}

// ForkPrefix is Fork of src's first n positions only (n <= Pos(src)): the dst rows start at n,
// sharing the prefix (a prompt) of a row that has gone on past it.
func (r *Rows) ForkPrefix(be tensor.Backend, caches []*tensor.Tensor, width, src, n int, dst []int) error {
	if err := r.check("fork source row", src); err != nil {
		return err
	}
	if n < 0 || n > r.pos[src] {
		return fmt.Errorf("decoder fork of %d positions from row %d, which holds %d", n, src, r.pos[src])
	}
	if err := r.distinct("fork destinations", dst); err != nil {
		return err
	}
	for _, d := range dst {
		if d == src {
			return fmt.Errorf("decoder fork destinations include the source row %d", src)
		}
	}
	if n > 0 {
		row, size := r.limit*width, n*width
		for _, c := range caches {
			from := c.View(src*row, size)
			for _, d := range dst {
				be.Copy(c.View(d*row, size), from)
			}
		}
	}
	for _, d := range dst {
		r.pos[d] = n
	}
	return nil
}
