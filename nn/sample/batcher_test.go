package sample

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
)

// groupRequests makes groups of size requests sharing a prompt of 1 to maxP tokens, each request
// with its own stream keyed by (group, index in group), groups in order.
func groupRequests(groups, size, maxP, vocab int) []Request {
	r := rng.New(21)
	var reqs []Request
	for g := range groups {
		p := make([]int32, 1+r.Intn(maxP))
		for i := range p {
			p[i] = int32(r.Intn(vocab))
		}
		for k := range size {
			reqs = append(reqs, Request{Prompt: p, Group: g, RNG: rng.Keyed(7, uint64(g), uint64(k))})
		}
	}
	return reqs
}

// fresh gives each request a new copy of its stream (a run consumes them).
func fresh(reqs []Request, order []int) []Request {
	out := make([]Request, len(order))
	for k, i := range order {
		q := reqs[i]
		out[k] = Request{Prompt: q.Prompt, Group: q.Group, RNG: rng.Keyed(7, uint64(q.Group), uint64(i%3))}
	}
	return out
}

// sameResult compares two results' request rows bitwise; a's row i is b's row perm[i].
func sameResult(a, b *Result, perm []int) error {
	f32 := func(x, y []float32) bool {
		return slices.EqualFunc(x, y, func(u, v float32) bool { return math.Float32bits(u) == math.Float32bits(v) })
	}
	for i, j := range perm {
		switch {
		case !slices.Equal(a.Tokens[i], b.Tokens[j]):
			return fmt.Errorf("request %d: tokens %v and %v", i, a.Tokens[i], b.Tokens[j])
		case !f32(a.LogProbs[i], b.LogProbs[j]) || !f32(a.Trunc[i], b.Trunc[j]) || !f32(a.Cutoff[i], b.Cutoff[j]):
			return fmt.Errorf("request %d: log-probs or cutoffs differ", i)
		case !slices.Equal(a.Kept[i], b.Kept[j]) || a.Finished[i] != b.Finished[j]:
			return fmt.Errorf("request %d: kept sets or ends differ", i)
		}
	}
	return nil
}

// TestBatchSameForAnySchedule: 4 groups of 3 requests with ragged prompts and completions
// (EOS drawn at different steps) give bitwise the same tokens, log-probs, kept sets and cutoffs
// with 1 slot (each request alone, prefilled on its own), 2, 5 or 12 slots, continuous or static
// batching, and requests arriving in order, reversed or shuffled. Steps stay under 17 tokens,
// within one of the CPU matrix multiply's paths (see GenerateBatch).
func TestBatchSameForAnySchedule(t *testing.T) {
	m := testModel(t)
	reqs := groupRequests(4, 3, 3, m.Config.VocabSize)
	n := len(reqs)
	cfg := BatchConfig{MaxNew: 12, EOS: 3, Sampling: Options{Temperature: 1.3, TopK: 12, TopP: 0.9}}
	inOrder := make([]int, n)
	for i := range inOrder {
		inOrder[i] = i
	}
	run := func(slots int, static bool, order []int) (*Result, BatchStats) {
		t.Helper()
		d, err := m.NewDecoder(slots, 20)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		c := cfg
		c.Static = static
		res, st, err := GenerateBatch(d, fresh(reqs, order), c)
		if err != nil {
			t.Fatal(err)
		}
		return res, st
	}
	want, _ := run(1, false, inOrder)
	lens := map[int]bool{}
	for i, toks := range want.Tokens {
		lens[len(toks)] = true
		if !want.Finished[i] && len(toks) != 12 || want.Finished[i] && toks[len(toks)-1] != 3 {
			t.Fatalf("request %d: %d tokens %v, finished %v", i, len(toks), toks, want.Finished[i])
		}
	}
	if len(lens) < 3 {
		t.Fatalf("completion lengths %v: the test wants ragged completions", lens)
	}
	reversed := slices.Clone(inOrder)
	slices.Reverse(reversed)
	shuffled := rng.New(5).Perm(n)
	for _, slots := range []int{1, 2, 5, 12} {
		for _, static := range []bool{false, true} {
			for name, order := range map[string][]int{"in order": inOrder, "reversed": reversed, "shuffled": shuffled} {
				got, st := run(slots, static, order)
				// got's row k is request order[k]: compare want's row order[k] with it.
				back := make([]int, n)
				for k, i := range order {
					back[i] = k
				}
				if err := sameResult(want, got, back); err != nil {
					t.Errorf("%d slots, static %v, %s: %v", slots, static, name, err)
				}
				if slots == 12 && st.Prefills != 4 || st.Prefills+st.Forked != n {
					t.Errorf("%d slots, %s: %d prefills and %d forks for %d requests in 4 groups", slots, name, st.Prefills, st.Forked, n)
				}
			}
		}
	}
}

// TestBatchMatchesGenerate: a request decoded in a batch draws exactly what Generate draws for
// its prompt alone from the same stream: the same tokens, log-probs, kept sets and cutoffs.
func TestBatchMatchesGenerate(t *testing.T) {
	m := testModel(t)
	reqs := groupRequests(3, 2, 3, m.Config.VocabSize) // steps under 17 tokens, as above
	opt := Options{Temperature: 0.8, TopK: 9, TopP: 0.93}
	d, err := m.NewDecoder(4, 18)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, _, err := GenerateBatch(d, reqs, BatchConfig{MaxNew: 10, EOS: 5, Sampling: opt})
	if err != nil {
		t.Fatal(err)
	}
	one, err := m.NewDecoder(1, 18)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for i, q := range reqs {
		want, err := Generate(one, [][]int32{q.Prompt}, 10, 5, opt, rng.Keyed(7, uint64(q.Group), uint64(i%2)))
		if err != nil {
			t.Fatal(err)
		}
		row := &Result{Tokens: got.Tokens[i : i+1], LogProbs: got.LogProbs[i : i+1], Trunc: got.Trunc[i : i+1],
			Kept: got.Kept[i : i+1], Cutoff: got.Cutoff[i : i+1], Finished: got.Finished[i : i+1]}
		if err := sameResult(want, row, []int{0}); err != nil {
			t.Errorf("request %d against Generate: %v", i, err)
		}
	}
}

// TestBatchKeepsSlotsBusy: with a fake model, 16 requests in groups of 4 on 4 slots and
// ragged completions (EOS likely): continuous batching takes fewer steps than static batching,
// keeps the slots busier and mostly forks a group's prompt from a slot still decoding it, and
// static batching prefills each group once.
func TestBatchKeepsSlotsBusy(t *testing.T) {
	const V = 50
	reqs := groupRequests(4, 4, 6, V)
	steps := map[bool]BatchStats{}
	var results []*Result
	for _, static := range []bool{false, true} {
		d := newFakeDecoder(4, 20, V)
		res, st, err := GenerateBatch(d, fresh4(reqs), BatchConfig{MaxNew: 12, EOS: 0, Sampling: Options{Temperature: 1, TopP: 1}, Static: static})
		if err != nil {
			t.Fatal(err)
		}
		steps[static] = st
		results = append(results, res)
	}
	if err := sameResult(results[0], results[1], []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}); err != nil {
		t.Fatalf("continuous and static batching differ: %v", err)
	}
	c, s := steps[false], steps[true]
	if c.Steps >= s.Steps || c.Decoded != s.Decoded {
		t.Errorf("continuous %+v, static %+v: want fewer steps for the same tokens", c, s)
	}
	busy := func(st BatchStats) float64 { return float64(st.Decoded+st.Prefills) / float64(st.SlotSteps) }
	if busy(c) <= busy(s) {
		t.Errorf("slots busy %.2f continuous, %.2f static", busy(c), busy(s))
	}
	t.Logf("continuous %+v, static %+v", c, s)
	if c.Prefills+c.Forked != 16 || c.Prefills >= 8 {
		t.Errorf("continuous batching: %d prefills and %d forks; want requests of a group admitted later to fork its prompt from a slot still decoding", c.Prefills, c.Forked)
	}
	if s.Prefills != 4 || s.Forked != 12 {
		t.Errorf("static batching of whole groups: %d prefills, %d forks; want 4 and 12", s.Prefills, s.Forked)
	}
}

func fresh4(reqs []Request) []Request {
	out := make([]Request, len(reqs))
	for i, q := range reqs {
		out[i] = Request{Prompt: q.Prompt, Group: q.Group, RNG: rng.Keyed(7, uint64(q.Group), uint64(i%4))}
	}
	return out
}

// TestFaultBatchRequests: bad requests and settings, and non-finite logits, are refused with an
// error naming the request.
func TestFaultBatchRequests(t *testing.T) {
	ok := []int32{1, 2}
	opt := Options{Temperature: 1, TopP: 1}
	for _, c := range []struct {
		name string
		reqs []Request
		cfg  BatchConfig
		want string
	}{
		{"empty prompt", []Request{{Prompt: ok, RNG: rng.New(1)}, {Prompt: nil, Group: 1, RNG: rng.New(1)}}, BatchConfig{MaxNew: 2, Sampling: opt}, "request 1 has an empty prompt"},
		{"no room", []Request{{Prompt: make([]int32, 8), RNG: rng.New(1)}}, BatchConfig{MaxNew: 2, Sampling: opt}, "request 0: prompt of 8 tokens leaves no room in a context of 8"},
		{"group prompts", []Request{{Prompt: ok, RNG: rng.New(1)}, {Prompt: []int32{1, 3}, RNG: rng.New(1)}}, BatchConfig{MaxNew: 2, Sampling: opt}, "request 1 of group 0 has a prompt unlike request 0's"},
		{"no stream", []Request{{Prompt: ok}}, BatchConfig{MaxNew: 2, Sampling: opt}, "request 0 has no random stream"},
		{"max new", []Request{{Prompt: ok, RNG: rng.New(1)}}, BatchConfig{MaxNew: 0, Sampling: opt}, "want >= 1"},
		{"options", []Request{{Prompt: ok, RNG: rng.New(1)}}, BatchConfig{MaxNew: 2, Sampling: Options{Temperature: -1}}, "temperature"},
		{"own cap", []Request{{Prompt: ok, RNG: rng.New(1), MaxNew: -1}}, BatchConfig{MaxNew: 2, Sampling: opt}, "request 0 caps its new tokens at -1"},
		{"token id", []Request{{Prompt: []int32{1, 99}, RNG: rng.New(1)}}, BatchConfig{MaxNew: 2, Sampling: opt}, "outside the vocabulary"},
		{"NaN logits", []Request{{Prompt: ok, RNG: rng.New(1)}, {Prompt: []int32{nanToken}, Group: 4, RNG: rng.New(2)}}, BatchConfig{MaxNew: 3, Sampling: opt}, "request 1, new token 1: logit of token 0 is NaN"},
	} {
		d := newFakeDecoder(2, 8, 10)
		d.nan = nanToken
		_, _, err := GenerateBatch(d, c.reqs, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Greedy needs no stream; a request's own cap holds below the batch's.
	res, _, err := GenerateBatch(newFakeDecoder(2, 8, 10), []Request{{Prompt: ok}, {Prompt: ok, MaxNew: 2}}, BatchConfig{MaxNew: 4, EOS: -1})
	if err != nil {
		t.Fatalf("greedy without a stream: %v", err)
	}
	if len(res.Tokens[0]) != 4 || len(res.Tokens[1]) != 2 {
		t.Errorf("%d and %d new tokens, want 4 and 2 (the second request's own cap)", len(res.Tokens[0]), len(res.Tokens[1]))
	}
}

// nanToken in a row's history makes the fault test's fake decoder return NaN logits.
const nanToken = 9

// fakeDecoder is a RowDecoder whose logits are a hash of each row's token history, which a fork
// copies a prefix of and ResetRow clears, so forked and separately prefilled rows agree exactly.
type fakeDecoder struct {
	limit, vocab int
	nan          int32 // a token whose presence makes the row's logits NaN; -1: none
	hist         [][]int32
	out          []float32
}

func newFakeDecoder(rows, limit, vocab int) *fakeDecoder {
	return &fakeDecoder{limit: limit, vocab: vocab, nan: -1, hist: make([][]int32, rows)}
}

func (f *fakeDecoder) Limit() int     { return f.limit }
func (f *fakeDecoder) Rows() int      { return len(f.hist) }
func (f *fakeDecoder) VocabSize() int { return f.vocab }

func (f *fakeDecoder) ResetRow(row int) error { f.hist[row] = f.hist[row][:0]; return nil }

func (f *fakeDecoder) ForkPrefix(src, n int, dst []int) error {
	if n > len(f.hist[src]) {
		return fmt.Errorf("fake: fork of %d positions from row %d at %d", n, src, len(f.hist[src]))
	}
	for _, d := range dst {
		f.hist[d] = append(f.hist[d][:0], f.hist[src][:n]...)
	}
	return nil
}

func (f *fakeDecoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	W := f.vocab + 2 // padded
	f.out = f.out[:0]
	for i, row := range rows {
		for _, id := range tokens[i] {
			if id < 0 || int(id) >= f.vocab {
				return nil, fmt.Errorf("fake: token id %d outside the vocabulary", id)
			}
		}
		if len(f.hist[row])+len(tokens[i]) > f.limit {
			return nil, fmt.Errorf("fake: row %d full", row)
		}
		f.hist[row] = append(f.hist[row], tokens[i]...)
		h := uint64(len(f.hist[row]))
		for _, id := range f.hist[row] {
			h = h*1_000_003 + uint64(id)
		}
		r := rng.New(h)
		for v := range W {
			x := float32(4 * r.Float64())
			if v == 0 { // token 0 likely enough to end completions at ragged lengths
				x += 2.5
			}
			if slices.Contains(f.hist[row], f.nan) && v == 0 {
				x = float32(math.NaN())
			}
			f.out = append(f.out, x)
		}
	}
	return f.out, nil
}

// The models' decoders are row decoders.
var (
	_ RowDecoder = (*gpt2.Decoder)(nil)
	_ RowDecoder = (*llama.Decoder)(nil)
)

// Finished hears of each request once, as it ends, whatever the slot count.
func TestBatchReportsEachFinishedRequest(t *testing.T) {
	const V = 50
	reqs := groupRequests(3, 3, 6, V)
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	for _, slots := range []int{1, 4, 9} {
		var ended []int
		_, _, err := GenerateBatch(newFakeDecoder(slots, 20, V), fresh(reqs, all), BatchConfig{MaxNew: 12, EOS: 0,
			Sampling: Options{Temperature: 1, TopP: 1}, Finished: func(i int) { ended = append(ended, i) }})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ended)
		if !slices.Equal(ended, all) {
			t.Fatalf("%d slots: requests reported ended %v, want each of 0..%d once", slots, ended, len(reqs)-1)
		}
	}
}
