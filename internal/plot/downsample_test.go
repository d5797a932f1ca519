package plot

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// noisy is n steps of a falling loss with noise and rare spikes either way.
func noisy(n int, seed int64) []Point {
	rng := rand.New(rand.NewSource(seed))
	s := make([]Point, n)
	for i := range s {
		v := 10*math.Exp(-3*float64(i)/float64(n)) + rng.NormFloat64()
		if rng.Intn(1000) == 0 {
			v *= 100 * (rng.Float64() - 0.5)
		}
		s[i] = Point{float64(i + 1), v}
	}
	return s
}

// extremes are the first, lowest, highest and last points of s (sorted by step).
func extremes(s []Point) []Point {
	lo, hi := s[0], s[0]
	for _, p := range s {
		if p.Value < lo.Value {
			lo = p
		}
		if p.Value > hi.Value {
			hi = p
		}
	}
	return []Point{s[0], lo, hi, s[len(s)-1]}
}

func sortedSubset(t *testing.T, got, of []Point) {
	t.Helper()
	in := map[Point]bool{}
	for _, p := range of {
		in[p] = true
	}
	for i, p := range got {
		if !in[p] {
			t.Fatalf("point %v is not in the series", p)
		}
		if i > 0 && p.Step < got[i-1].Step {
			t.Fatalf("points out of step order at %d: %v after %v", i, p, got[i-1])
		}
	}
}

func TestDownsampleKeepsEachColumnsExtremes(t *testing.T) {
	s := noisy(100_000, 1)
	const cols = 500
	lo, hi := s[0].Step, s[len(s)-1].Step
	got := Downsample(s, lo, hi, cols)
	if len(got) > 4*cols {
		t.Errorf("%d points kept for %d columns, want at most %d", len(got), cols, 4*cols)
	}
	sortedSubset(t, got, s)
	kept := map[Point]bool{}
	for _, p := range got {
		kept[p] = true
	}
	for _, p := range extremes(s) {
		if !kept[p] {
			t.Errorf("%v (first, global min, global max or last) was dropped", p)
		}
	}
	// Every column's first, min, max and last point survive.
	width := (hi - lo) / cols
	byCol := map[int][]Point{}
	for _, p := range s {
		k := min(int((p.Step-lo)/width), cols-1)
		byCol[k] = append(byCol[k], p)
	}
	for k, ps := range byCol {
		for _, p := range extremes(ps) {
			if !kept[p] {
				t.Fatalf("column %d lost %v", k, p)
			}
		}
	}
	if short := s[:100]; len(Downsample(short, lo, hi, cols)) != 100 {
		t.Error("a series shorter than the columns can show should be kept whole")
	}
}

// TestLoadThinsLongSeries: a long metrics file, partly out of step order, is kept as a bounded
// series that still has its first, last, lowest and highest points, in step order, and whose
// picture at any width up to the bins' matches the full series' to a column.
func TestLoadThinsLongSeries(t *testing.T) {
	s := noisy(100_000, 2)
	order := rand.New(rand.NewSource(3)).Perm(len(s))[:1000] // a few lines moved to the end
	moved := map[int]bool{}
	for _, i := range order {
		moved[i] = true
	}
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	write := func(p Point) { fmt.Fprintf(w, `{"step":%d,"loss":%v}`+"\n", int(p.Step), p.Value) }
	for i, p := range s {
		if !moved[i] {
			write(p)
		}
	}
	for _, i := range order {
		write(s[i])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Series["loss"]
	if len(got) > 4*maxBins {
		t.Errorf("%d points kept, want at most %d", len(got), 4*maxBins)
	}
	sortedSubset(t, got, s)
	for _, p := range extremes(s) {
		if !slices.Contains(got, p) {
			t.Errorf("%v (first, global min, global max or last) was dropped", p)
		}
	}
	// Per picture column, the thinned series reaches the full series' extremes within a
	// neighbouring column (bins and columns need not share edges).
	const cols = 1500
	lo, hi := s[0].Step, s[len(s)-1].Step
	colMin := func(ps []Point) (lows, highs []float64) {
		lows, highs = make([]float64, cols), make([]float64, cols)
		for k := range lows {
			lows[k], highs[k] = math.Inf(1), math.Inf(-1)
		}
		for _, p := range ps {
			k := min(int((p.Step-lo)/((hi-lo)/cols)), cols-1)
			lows[k], highs[k] = min(lows[k], p.Value), max(highs[k], p.Value)
		}
		return lows, highs
	}
	fullLo, fullHi := colMin(s)
	thinLo, thinHi := colMin(Downsample(got, lo, hi, cols))
	for k := range cols {
		a, b := max(k-1, 0), min(k+2, cols)
		if slices.Min(thinLo[a:b]) > fullLo[k] || slices.Max(thinHi[a:b]) < fullHi[k] {
			t.Fatalf("column %d spans %v..%v in full but %v..%v thinned", k, fullLo[k], fullHi[k], thinLo[k], thinHi[k])
		}
	}
}

// TestBinnerWidensForFarSteps: steps far apart and far from the first ones (up to 2^53) grow
// the bins without overflowing their numbers, and fractional steps are kept apart.
func TestBinnerWidensForFarSteps(t *testing.T) {
	b := &binner{}
	for i := range maxRaw + 10 {
		b.add(seqPoint{Point{float64(i) / 1e6, float64(i % 7)}, int64(i)})
	}
	b.add(seqPoint{Point{maxStep, 42}, 1 << 40})
	b.add(seqPoint{Point{-maxStep, -42}, 1<<40 + 1})
	got := b.points()
	if len(got) > 4*maxBins || got[0] != (Point{-maxStep, -42}) || got[len(got)-1] != (Point{maxStep, 42}) {
		t.Errorf("%d points from %v to %v", len(got), got[0], got[len(got)-1])
	}
	small := &binner{}
	for i := range 100 {
		small.add(seqPoint{Point{float64(i) / 1000, float64(i)}, int64(i)})
	}
	if len(small.points()) != 100 {
		t.Errorf("100 fractional steps kept as %d points", len(small.points()))
	}
}
