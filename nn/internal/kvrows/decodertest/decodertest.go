// Package decodertest holds the checks every model's key/value-cache decoder must pass.
//
// The model packages run each check on each backend, given the model as a [Model] and its
// decoder as a [Decoder]:
//   - [RowsMatchForward]: rows at their own positions match the full forward;
//   - [ForkMatchesSeparatePrefill]: a forked row matches one prefilled on its own;
//   - [StepLeavesOtherRows]: a step over some rows, or a reset of one, leaves the others
//     as they were;
//   - [FaultBadInput]: bad rows, counts and token ids are refused, leaving every row as it was.
package decodertest

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// Decoder is the per-row decoder of a model.
type Decoder interface {
	Step(tokens []int32, Tq int) ([]float32, error)
	StepRows(rows []int, tokens []int32, Tq int) ([]float32, error)
	StepRagged(rows []int, tokens [][]int32) ([]float32, error)
	Fork(src int, dst []int) error
	ForkPrefix(src, n int, dst []int) error
	ResetRow(row int) error
	RowPos(row int) int
	Pos() int
	Close()
}

// Model is what the checks need of a model.
type Model struct {
	NewDecoder func(B, limit int) (Decoder, error)
	// Forward returns the logits (B, T, Width) of B rows of T tokens.
	Forward func(t *testing.T, seq []int32, B, T int) []float32
	Width   int     // logits per row, padding included
	Vocab   int     // real vocabulary: token ids and meaningful logits
	MaxT    int     // the longest sequence Forward takes
	Tol     float64 // decoder against forward
}

func randomSeq(r *rng.RNG, n, vocab int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(r.Intn(vocab))
	}
	return s
}

func open(t *testing.T, m Model, B, limit int) Decoder {
	t.Helper()
	d, err := m.NewDecoder(B, limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// RowsMatchForward drives B rows through random steps over random subsets in random order, each
// row feeding 1 to 3 tokens (ragged or not), so that rows sit at different positions, and checks
// every returned row's logits against the full forward of that row's own sequence.
func RowsMatchForward(t *testing.T, m Model) {
	const B = 3
	T := min(m.MaxT, 12)
	r := rng.New(7)
	seq := randomSeq(r, B*T, m.Vocab)
	full := m.Forward(t, seq, B, T)
	d := open(t, m, B, T)
	for step := 0; ; step++ {
		var rows []int
		for _, row := range r.Perm(B) {
			if d.RowPos(row) < T && r.Intn(3) > 0 {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			if d.RowPos(0) == T && d.RowPos(1) == T && d.RowPos(2) == T {
				return
			}
			continue
		}
		ragged := step%2 == 1
		n := 1 + r.Intn(3)
		lists := make([][]int32, len(rows))
		var flat []int32
		for i, row := range rows {
			k := min(n, T-d.RowPos(row))
			if ragged {
				k = min(1+r.Intn(3), T-d.RowPos(row))
			}
			lists[i] = seq[row*T+d.RowPos(row) : row*T+d.RowPos(row)+k]
			flat = append(flat, lists[i]...)
		}
		if !ragged && len(flat) != n*len(rows) { // a row near its end: feed what it has left
			ragged = true
		}
		before := make([]int, len(rows))
		for i, row := range rows {
			before[i] = d.RowPos(row)
		}
		var got []float32
		var err error
		if ragged {
			got, err = d.StepRagged(rows, lists)
		} else {
			got, err = d.StepRows(rows, flat, n)
		}
		if err != nil {
			t.Fatalf("step %d rows %v: %v", step, rows, err)
		}
		if len(got) != len(rows)*m.Width {
			t.Fatalf("step %d: %d logits for %d rows of %d", step, len(got), len(rows), m.Width)
		}
		for i, row := range rows {
			pos := before[i] + len(lists[i]) - 1
			if d.RowPos(row) != pos+1 {
				t.Fatalf("step %d: row %d at %d, want %d", step, row, d.RowPos(row), pos+1)
			}
			want := full[(row*T+pos)*m.Width : (row*T+pos)*m.Width+m.Vocab]
			if diff := maxDiff(got[i*m.Width:i*m.Width+m.Vocab], want); diff > m.Tol {
				t.Fatalf("step %d (ragged %v) row %d position %d: decoder logits differ from the forward's by %g", step, ragged, row, pos, diff)
			}
		}
	}
}

// ForkMatchesSeparatePrefill prefills a prompt once and forks it to the other rows, then
// decodes them all (one token, then a ragged extension, as a tool's reply), and checks every
// step's logits bitwise against a decoder that prefilled the prompt on each row separately.
func ForkMatchesSeparatePrefill(t *testing.T, m Model) {
	const B, P = 4, 6
	limit := min(m.MaxT, P+8)
	r := rng.New(9)
	prompt := randomSeq(r, P, m.Vocab)
	forked, separate := open(t, m, B, limit), open(t, m, B, limit)
	first, err := forked.StepRows([]int{2}, prompt, P)
	if err != nil {
		t.Fatal(err)
	}
	first = append([]float32(nil), first...)
	if err := forked.Fork(2, []int{0, 3, 1}); err != nil {
		t.Fatal(err)
	}
	for row := range B {
		got, err := separate.StepRows([]int{row}, prompt, P)
		if err != nil {
			t.Fatal(err)
		}
		if !same(got, first) {
			t.Fatalf("prefill of row %d differs from row 2's", row)
		}
		if forked.RowPos(row) != P {
			t.Fatalf("forked row %d at %d, want %d", row, forked.RowPos(row), P)
		}
	}
	all := []int{0, 1, 2, 3}
	next := randomSeq(r, B, m.Vocab)
	compare := func(what string, a, b []float32, errA, errB error) {
		t.Helper()
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v, %v", what, errA, errB)
		}
		if !same(a, b) {
			t.Fatalf("%s: forked rows' logits differ from separately prefilled rows' by %g", what, maxDiff(a, b))
		}
	}
	a, errA := forked.StepRows(all, next, 1)
	a = append([]float32(nil), a...)
	b, errB := separate.StepRows(all, next, 1)
	compare("first decode step", a, b, errA, errB)
	ext := [][]int32{randomSeq(r, 1, m.Vocab), randomSeq(r, 4, m.Vocab), randomSeq(r, 1, m.Vocab)}
	a, errA = forked.StepRagged([]int{3, 1, 0}, ext)
	a = append([]float32(nil), a...)
	b, errB = separate.StepRagged([]int{3, 1, 0}, ext)
	compare("ragged extension", a, b, errA, errB)
	a, errA = forked.StepRows([]int{1, 2}, next[:2], 1)
	a = append([]float32(nil), a...)
	b, errB = separate.StepRows([]int{1, 2}, next[:2], 1)
	compare("rows at different positions", a, b, errA, errB)
	// Row 2 has gone past the prompt: a row joining the group later forks just the prompt.
	if err := forked.ForkPrefix(2, P, []int{3}); err != nil {
		t.Fatal(err)
	}
	if forked.RowPos(3) != P || forked.RowPos(2) != P+2 {
		t.Fatalf("after a prefix fork rows 2 and 3 at %d and %d, want %d and %d", forked.RowPos(2), forked.RowPos(3), P+2, P)
	}
	if err := separate.ResetRow(3); err != nil {
		t.Fatal(err)
	}
	if _, err := separate.StepRows([]int{3}, prompt, P); err != nil {
		t.Fatal(err)
	}
	a, errA = forked.StepRows([]int{3}, next[3:], 1)
	a = append([]float32(nil), a...)
	b, errB = separate.StepRows([]int{3}, next[3:], 1)
	compare("a row given the prompt by a prefix fork", a, b, errA, errB)
}

// StepLeavesOtherRows checks that a step over some rows, and a reset of one, change neither the
// positions nor the caches of the others: their next logits are bitwise those of a decoder
// that never took that step. A reset row then starts afresh.
func StepLeavesOtherRows(t *testing.T, m Model) {
	const B, P = 3, 4
	limit := min(m.MaxT, P+6)
	r := rng.New(11)
	prefill := randomSeq(r, B*P, m.Vocab)
	busy, idle := open(t, m, B, limit), open(t, m, B, limit)
	for _, d := range []Decoder{busy, idle} {
		if _, err := d.Step(prefill, P); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := busy.StepRows([]int{1}, randomSeq(r, 3, m.Vocab), 3); err != nil {
		t.Fatal(err)
	}
	if busy.RowPos(0) != P || busy.RowPos(2) != P || busy.RowPos(1) != P+3 {
		t.Fatalf("positions %d %d %d after a step of row 1, want %d %d %d", busy.RowPos(0), busy.RowPos(1), busy.RowPos(2), P, P+3, P)
	}
	if busy.Pos() != -1 || idle.Pos() != P {
		t.Fatalf("Pos() %d with rows apart, %d with rows together at %d; want -1 and %d", busy.Pos(), idle.Pos(), P, P)
	}
	if _, err := busy.Step(randomSeq(r, B, m.Vocab), 1); err == nil || !strings.Contains(err.Error(), "StepRows") {
		t.Fatalf("Step with rows at different positions: got %v, want an error pointing to StepRows", err)
	}
	next := randomSeq(r, 2, m.Vocab)
	a, err := busy.StepRows([]int{2, 0}, next, 1)
	if err != nil {
		t.Fatal(err)
	}
	a = append([]float32(nil), a...)
	b, err := idle.StepRows([]int{2, 0}, next, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !same(a, b) {
		t.Fatalf("rows 0 and 2 changed under a step of row 1: logits differ by %g", maxDiff(a, b))
	}
	if err := busy.ResetRow(1); err != nil {
		t.Fatal(err)
	}
	if busy.RowPos(1) != 0 || busy.RowPos(0) != P+1 {
		t.Fatalf("after ResetRow(1) positions %d %d, want 0 %d", busy.RowPos(1), busy.RowPos(0), P+1)
	}
	fresh := open(t, m, 1, limit)
	row1 := prefill[P : 2*P]
	a, err = busy.StepRows([]int{1}, row1, P)
	if err != nil {
		t.Fatal(err)
	}
	a = append([]float32(nil), a...)
	if b, err = fresh.Step(row1, P); err != nil {
		t.Fatal(err)
	}
	if !same(a, b) {
		t.Fatalf("a reset row's logits differ from a fresh decoder's by %g", maxDiff(a, b))
	}
}

// FaultBadInput checks that bad rows, token counts, ids and lengths give clear errors and leave
// every row where it was.
func FaultBadInput(t *testing.T, m Model) {
	const B, limit = 3, 5
	d := open(t, m, B, limit)
	if _, err := d.StepRows([]int{0}, []int32{1, 2, 3}, 3); err != nil {
		t.Fatal(err)
	}
	bad := int32(m.Vocab)
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"row out of range", func() error { _, err := d.StepRows([]int{0, 3}, []int32{1, 1}, 1); return err }, "row 3 outside the decoder's rows [0, 3)"},
		{"negative row", func() error { _, err := d.StepRows([]int{-1}, []int32{1}, 1); return err }, "row -1 outside"},
		{"duplicate row", func() error { _, err := d.StepRows([]int{1, 2, 1}, []int32{1, 1, 1}, 1); return err }, "names row 1 twice"},
		{"no rows", func() error { _, err := d.StepRows(nil, nil, 1); return err }, "lists no rows"},
		{"past the row's limit", func() error { _, err := d.StepRows([]int{1, 0}, []int32{1, 1, 1, 1, 1, 1}, 3); return err }, "row 0 holds 5 positions; 3 + 3 would exceed it"},
		{"zero tokens", func() error { _, err := d.StepRows([]int{1}, nil, 0); return err }, "feeds 0 tokens to row 1"},
		{"token count", func() error { _, err := d.StepRows([]int{1, 2}, []int32{1, 1, 1}, 2); return err }, "got 3 tokens for rows feeding 4"},
		{"token id", func() error { _, err := d.StepRows([]int{2, 0}, []int32{1, 1, bad, 1}, 2); return err }, "token 0 of row 0 (position 3) is id"},
		{"ragged empty list", func() error { _, err := d.StepRagged([]int{1, 2}, [][]int32{{1}, {}}); return err }, "feeds 0 tokens to row 2"},
		{"ragged list count", func() error { _, err := d.StepRagged([]int{1, 2}, [][]int32{{1}}); return err }, "1 token lists for 2 rows"},
		{"Step at different positions", func() error { _, err := d.Step([]int32{1, 1, 1}, 1); return err }, "every row at one position"},
		{"fork source", func() error { return d.Fork(3, []int{1}) }, "fork source row 3 outside"},
		{"fork destination", func() error { return d.Fork(0, []int{1, 4}) }, "fork destinations[1]: row 4 outside"},
		{"fork duplicate", func() error { return d.Fork(0, []int{2, 2}) }, "names row 2 twice"},
		{"fork onto itself", func() error { return d.Fork(0, []int{1, 0}) }, "include the source row 0"},
		{"fork past the source", func() error { return d.ForkPrefix(0, 4, []int{1}) }, "fork of 4 positions from row 0, which holds 3"},
		{"prefix fork onto itself", func() error { return d.ForkPrefix(0, 2, []int{0}) }, "include the source row 0"},
		{"reset row", func() error { return d.ResetRow(-2) }, "row -2 outside"},
	} {
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
		if d.RowPos(0) != 3 || d.RowPos(1) != 0 || d.RowPos(2) != 0 {
			t.Fatalf("%s: positions moved to %d %d %d", c.name, d.RowPos(0), d.RowPos(1), d.RowPos(2))
		}
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), "row 3 outside [0, 3)") {
				t.Errorf("RowPos(3): got panic %v, want one naming the row", p)
			}
		}()
		d.RowPos(3)
	}()
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}
