package data

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// positions returns tokens whose values are their own positions, so a batch shows exactly
// which stream positions it read.
func positions(n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(i)
	}
	return t
}

func cfg(n int) LoaderConfig {
	return LoaderConfig{B: 4, T: 8, MaxT: 16, VocabSize: n, Seed: 1, Source: "test.bin"}
}

func take(l *Loader, k int) [][]int32 {
	var out [][]int32
	for range k {
		x, y := l.Next()
		out = append(out, slices.Concat(x, y))
	}
	return out
}

func TestLoaderInputsAndTargets(t *testing.T) {
	c := cfg(1000)
	c.NoShuffle = true
	train, val, err := NewLoaders(positions(1000), c)
	if err != nil {
		t.Fatal(err)
	}
	if val != nil {
		t.Fatal("validation loader without a validation fraction")
	}
	// Sequences start every T tokens and need T+1: (1000-1)/8 = 124 sequences, 31 batches.
	if train.Sequences() != 124 || train.BatchesPerEpoch() != 31 {
		t.Fatalf("%d sequences, %d batches; want 124, 31", train.Sequences(), train.BatchesPerEpoch())
	}
	for batch := range 2 {
		x, y := train.Next()
		if len(x) != 32 || len(y) != 32 {
			t.Fatalf("batch sizes %d %d, want 32", len(x), len(y))
		}
		for r := range 4 {
			for j := range 8 {
				want := int32((batch*4+r)*8 + j)
				if x[r*8+j] != want || y[r*8+j] != want+1 {
					t.Fatalf("batch %d row %d col %d: x=%d y=%d, want %d %d", batch, r, j, x[r*8+j], y[r*8+j], want, want+1)
				}
			}
		}
	}
}

func TestLoaderEpochsVisitEverySequenceOnce(t *testing.T) {
	train, _, err := NewLoaders(positions(1000), cfg(1000))
	if err != nil {
		t.Fatal(err)
	}
	nb := train.BatchesPerEpoch()
	var prevOrder []int32
	for epoch := range 3 {
		if train.Epoch() != epoch {
			t.Fatalf("Epoch() = %d, want %d", train.Epoch(), epoch)
		}
		seen := map[int32]bool{}
		var order []int32
		for range nb {
			x, y := train.Next()
			for r := range 4 {
				start := x[r*8]
				if start%8 != 0 || seen[start] {
					t.Fatalf("epoch %d: sequence start %d repeated or misaligned", epoch, start)
				}
				if y[r*8+7] != start+8 {
					t.Fatalf("row starting at %d has last target %d", start, y[r*8+7])
				}
				seen[start] = true
				order = append(order, start)
			}
		}
		if len(seen) != nb*4 {
			t.Fatalf("epoch %d visited %d sequences, want %d", epoch, len(seen), nb*4)
		}
		if slices.IsSorted(order) {
			t.Fatalf("epoch %d is in stream order despite shuffling", epoch)
		}
		if prevOrder != nil && slices.Equal(order, prevOrder) {
			t.Fatal("two epochs used the same order")
		}
		prevOrder = order
	}
}

func TestLoaderDeterminism(t *testing.T) {
	toks := positions(2000)
	mk := func(seed uint64) *Loader {
		c := cfg(2000)
		c.Seed = seed
		l, _, err := NewLoaders(toks, c)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	n := 2*mk(1).BatchesPerEpoch() + 3
	a, b, other := take(mk(7), n), take(mk(7), n), take(mk(8), n)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("same seed, batch %d differs", i)
		}
	}
	same := 0
	for i := range a {
		if slices.Equal(a[i], other[i]) {
			same++
		}
	}
	if same > n/4 {
		t.Fatalf("seeds 7 and 8 agree on %d of %d batches", same, n)
	}
}

func TestLoaderResume(t *testing.T) {
	toks := positions(3000)
	c := cfg(3000)
	a, _, err := NewLoaders(toks, c)
	if err != nil {
		t.Fatal(err)
	}
	nb := a.BatchesPerEpoch()
	for _, k := range []int{0, 5, nb - 1, nb, nb + 7} {
		a.Reset()
		take(a, k)
		raw, err := json.Marshal(a.State())
		if err != nil {
			t.Fatal(err)
		}
		var st LoaderState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		b, _, err := NewLoaders(toks, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Restore(st); err != nil {
			t.Fatal(err)
		}
		if b.Epoch() != a.Epoch() {
			t.Fatalf("after %d batches: restored epoch %d, want %d", k, b.Epoch(), a.Epoch())
		}
		want, got := take(a, nb+2), take(b, nb+2)
		for i := range want {
			if !slices.Equal(want[i], got[i]) {
				t.Fatalf("resumed after %d batches: batch %d differs", k, i)
			}
		}
	}
	// Reset replays the run from the start.
	fresh, _, _ := NewLoaders(toks, c)
	a.Reset()
	want, got := take(fresh, 5), take(a, 5)
	for i := range want {
		if !slices.Equal(want[i], got[i]) {
			t.Fatalf("after Reset batch %d differs from a fresh loader", i)
		}
	}
}

func TestLoaderRestoreErrors(t *testing.T) {
	toks := positions(3000)
	c := cfg(3000)
	c.ValFraction = 0.2
	train, val, err := NewLoaders(toks, c)
	if err != nil {
		t.Fatal(err)
	}
	good := train.State()
	for _, tc := range []struct {
		edit func(*LoaderState)
		want string
	}{
		{func(s *LoaderState) { s.Seed++ }, "seed"},
		{func(s *LoaderState) { s.B = 2 }, "B=2"},
		{func(s *LoaderState) { s.T = 4 }, "T=4"},
		{func(s *LoaderState) { s.Sequences-- }, "the data changed"},
		{func(s *LoaderState) { s.Shuffle = false }, "shuffle"},
		{func(s *LoaderState) { s.Split = "validation" }, "split"},
		{func(s *LoaderState) { s.Batch = train.BatchesPerEpoch() }, "outside"},
		{func(s *LoaderState) { s.Epoch = -1 }, "outside"},
	} {
		s := good
		tc.edit(&s)
		if err := train.Restore(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Restore(%+v): %v, want an error about %q", s, err, tc.want)
		}
	}
	if err := val.Restore(good); err == nil {
		t.Error("validation loader accepted a training state")
	}
}

// covered returns the stream positions a loader reads in one epoch.
func covered(l *Loader) map[int32]bool {
	l.Reset()
	seen := map[int32]bool{}
	for range l.BatchesPerEpoch() {
		x, y := l.Next()
		for i := range x {
			seen[x[i]] = true
			seen[y[i]] = true
		}
	}
	l.Reset()
	return seen
}

func TestTrainValDisjoint(t *testing.T) {
	const n = 10000
	for _, mode := range []ValMode{ValTail, ValInterleaved} {
		c := cfg(n)
		c.ValFraction = 0.1
		c.ValMode = mode
		train, val, err := NewLoaders(positions(n), c)
		if err != nil {
			t.Fatal(err)
		}
		tr, va := covered(train), covered(val)
		for p := range va {
			if tr[p] {
				t.Fatalf("%v: position %d is in both splits", mode, p)
			}
		}
		// The split is close to the asked fraction: val reads about 10% of the stream.
		if f := float64(len(va)) / n; f < 0.08 || f > 0.11 {
			t.Errorf("%v: validation reads %.3f of the stream", mode, f)
		}
		if f := float64(len(tr)) / n; f < 0.85 {
			t.Errorf("%v: training reads only %.3f of the stream", mode, f)
		}
		lo, hi := int32(n), int32(0)
		for p := range va {
			lo, hi = min(lo, p), max(hi, p)
		}
		switch mode {
		case ValTail:
			if lo < n*9/10 {
				t.Errorf("tail validation starts at %d, before %d", lo, n*9/10)
			}
		case ValInterleaved:
			if lo > n/5 || hi < n*4/5 {
				t.Errorf("interleaved validation spans only %d..%d", lo, hi)
			}
		}
		// Validation is read in stream order, the same every time.
		x, _ := val.Next()
		if !slices.IsSorted(x) {
			t.Errorf("%v: validation batch is shuffled", mode)
		}
	}
}

func TestLoaderErrors(t *testing.T) {
	toks := positions(100)
	toks[57] = 70000
	for _, tc := range []struct {
		edit func(*LoaderConfig)
		toks []int32
		want string
	}{
		{func(c *LoaderConfig) { c.B = 0 }, nil, "B=0"},
		{func(c *LoaderConfig) { c.T = 0 }, nil, "T=0"},
		{func(c *LoaderConfig) { c.T = 17 }, nil, "T=17 must be between 1 and the model's maxT=16"},
		{func(c *LoaderConfig) { c.MaxT = 0 }, nil, "maxT=0"},
		{func(c *LoaderConfig) { c.VocabSize = 0 }, nil, "vocab size 0"},
		{func(c *LoaderConfig) { c.ValFraction = 1 }, nil, "validation fraction 1"},
		{func(c *LoaderConfig) { c.ValFraction = -0.1 }, nil, "validation fraction -0.1"},
		{func(c *LoaderConfig) { c.ValFraction = math.NaN() }, nil, "validation fraction NaN"},
		{func(c *LoaderConfig) { c.ValMode = 7 }, nil, "unknown validation mode 7"},
		{func(c *LoaderConfig) {}, toks, "test.bin: token id 70000 at position 57 is outside the vocabulary of 1000"},
		{func(c *LoaderConfig) {}, []int32{1, 2, -3}, "token id -3 at position 2"},
		// 4 rows of 8 need 33 consecutive tokens.
		{func(c *LoaderConfig) {}, positions(32), "train split has 32 tokens, 3 sequences of T+1=9; one batch of B=4 needs 4 sequences (at least 33 consecutive tokens)"},
		{func(c *LoaderConfig) { c.ValFraction = 0.05 }, positions(200), "validation split has 10 tokens, 1 sequences"},
		{func(c *LoaderConfig) { c.ValFraction = 0.1; c.ValMode = ValInterleaved; c.ValBlock = 8 }, positions(500), "validation block of 8 tokens is shorter than one sequence of T+1=9"},
	} {
		c := cfg(1000)
		tc.edit(&c)
		in := tc.toks
		if in == nil {
			in = positions(500)
		}
		_, _, err := NewLoaders(in, c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.bin") {
			t.Errorf("config %+v: error %v, want %q naming test.bin", c, err, tc.want)
		}
	}
	// The boundary case works: exactly B*T+1 tokens make one batch.
	if l, _, err := NewLoaders(positions(33), cfg(1000)); err != nil || l.BatchesPerEpoch() != 1 {
		t.Fatalf("33 tokens: %v", err)
	}
}

func TestLoaderNoAllocs(t *testing.T) {
	l, _, err := NewLoaders(positions(1000), cfg(1000))
	if err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { l.Next() }); a != 0 {
		t.Fatalf("Next allocates %.1f times per call", a)
	}
}

func TestRNGUniform(t *testing.T) {
	// splitmix64 reference values for seed 0 (from its published definition).
	r := rng{}
	for _, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := r.next(); got != want {
			t.Fatalf("splitmix64 gave %#x, want %#x", got, want)
		}
	}
	// intn is roughly uniform: 6000 draws over 6 buckets.
	var counts [6]int
	for range 6000 {
		counts[r.intn(6)]++
	}
	for i, c := range counts {
		if c < 850 || c > 1150 {
			t.Fatalf("bucket %d got %d of 6000", i, c)
		}
	}
}

func ExampleNewLoaders() {
	tokens := make([]int32, 100)
	for i := range tokens {
		tokens[i] = int32(i)
	}
	train, val, err := NewLoaders(tokens, LoaderConfig{B: 2, T: 4, MaxT: 8, VocabSize: 100,
		ValFraction: 0.2, NoShuffle: true, Source: "example"})
	if err != nil {
		panic(err)
	}
	x, y := train.Next()
	fmt.Println("train inputs ", x)
	fmt.Println("train targets", y)
	x, _ = val.Next()
	fmt.Println("val inputs   ", x)
	// Output:
	// train inputs  [0 1 2 3 4 5 6 7]
	// train targets [1 2 3 4 5 6 7 8]
	// val inputs    [80 81 82 83 84 85 86 87]
}
