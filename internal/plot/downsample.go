package plot

import (
	"math"
	"slices"
	"sort"
)

// A line through a column's first point, lowest, highest and last point (by step) covers the
// same pixels as a line through all of its points when the column is at most a pixel wide, so
// a series is kept as at most these four points per column.

// seqPoint is a point with its line number, which orders points of the same step.
type seqPoint struct {
	Point
	seq int64
}

func before(a, b seqPoint) bool {
	return a.Step < b.Step || a.Step == b.Step && a.seq < b.seq
}

// column is what a column's points leave in the picture.
type column struct{ first, lo, hi, last seqPoint }

func newColumn(p seqPoint) column { return column{p, p, p, p} }

func (c *column) add(p seqPoint) {
	if before(p, c.first) {
		c.first = p
	}
	if before(c.last, p) {
		c.last = p
	}
	if p.Value < c.lo.Value {
		c.lo = p
	}
	if p.Value > c.hi.Value {
		c.hi = p
	}
}

func (c *column) merge(o column) {
	c.add(o.first)
	c.add(o.lo)
	c.add(o.hi)
	c.add(o.last)
}

// appendTo appends the column's distinct points in step order.
func (c *column) appendTo(out []seqPoint) []seqPoint {
	ps := []seqPoint{c.first, c.lo, c.hi, c.last}
	sort.Slice(ps, func(i, j int) bool { return before(ps[i], ps[j]) })
	for i, p := range ps {
		if i == 0 || p.seq != ps[i-1].seq {
			out = append(out, p)
		}
	}
	return out
}

// Downsample returns the points of s (sorted by step) that a line drawn over cols pixel
// columns spanning steps lo to hi needs: each column's first, lowest, highest and last point,
// in step order; points outside lo..hi fall in the nearest edge column.
func Downsample(s []Point, lo, hi float64, cols int) []Point {
	if cols < 1 || len(s) <= 4*cols || !(hi > lo) {
		return s
	}
	width := (hi - lo) / float64(cols)
	out := make([]Point, 0, 4*cols)
	var cur column
	curCol := -1
	flush := func() {
		if curCol >= 0 {
			for _, p := range cur.appendTo(nil) {
				out = append(out, p.Point)
			}
		}
	}
	for i, p := range s {
		k, f := cols-1, (p.Step-lo)/width
		switch {
		case f < 1:
			k = 0
		case f < float64(cols):
			k = int(f)
		}
		sp := seqPoint{p, int64(i)}
		if k != curCol {
			flush()
			cur, curCol = newColumn(sp), k
			continue
		}
		cur.add(sp)
	}
	flush()
	return out
}

// Streaming keeps of a series read in any order what Downsample would keep of it for a
// picture of any width up to a few thousand pixels: all points while they are few, then the
// first, lowest, highest and last point of each bin of steps, bins of a power-of-two width
// that doubles (merging pairs) whenever there would be more than maxBins of them.
const (
	maxRaw  = 16384
	maxBins = 4096
)

// binner is one series being read.
type binner struct {
	raw   []seqPoint // before binning starts
	width float64    // bin width, a power of two; 0 while raw
	bins  map[int64]*column
	key   int64 // bin of the last point, which the next one is likely to share
	last  *column
}

// maxKey keeps bin numbers far from int64's limits; steps are at most 2^53.
const maxKey = 1 << 60

func (b *binner) add(p seqPoint) {
	if b.width == 0 {
		b.raw = append(b.raw, p)
		if len(b.raw) > maxRaw {
			b.startBins()
		}
		return
	}
	k, ok := b.keyOf(p.Step)
	for !ok {
		b.grow()
		k, ok = b.keyOf(p.Step)
	}
	if b.last != nil && k == b.key {
		b.last.add(p)
		return
	}
	c := b.bins[k]
	if c == nil {
		nc := newColumn(p)
		c = &nc
		b.bins[k] = c
	} else {
		c.add(p)
	}
	b.key, b.last = k, c
	for len(b.bins) > maxBins {
		b.grow()
	}
}

func (b *binner) keyOf(step float64) (int64, bool) {
	k := math.Floor(step / b.width)
	return int64(k), math.Abs(k) < maxKey
}

// startBins bins the raw points at the narrowest width that fits their span in maxBins.
func (b *binner) startBins() {
	lo, hi := b.raw[0].Step, b.raw[0].Step
	for _, p := range b.raw {
		lo, hi = min(lo, p.Step), max(hi, p.Step)
	}
	b.width = 1
	if span := hi - lo; span > 0 {
		b.width = math.Pow(2, math.Ceil(math.Log2(span/maxBins)))
	}
	raw := b.raw
	b.raw, b.bins = nil, map[int64]*column{}
	for _, p := range raw {
		b.add(p)
	}
}

// grow doubles the bin width, merging each pair of bins.
func (b *binner) grow() {
	b.width *= 2
	merged := make(map[int64]*column, len(b.bins)/2+1)
	for k, c := range b.bins {
		k >>= 1 // floor(k/2), negative keys included
		if m := merged[k]; m != nil {
			m.merge(*c)
		} else {
			merged[k] = c
		}
	}
	b.bins, b.last = merged, nil
}

// points returns what is kept, in step order.
func (b *binner) points() []Point {
	var ps []seqPoint
	if b.width == 0 {
		ps = b.raw
		sort.Slice(ps, func(i, j int) bool { return before(ps[i], ps[j]) })
	} else {
		keys := make([]int64, 0, len(b.bins))
		for k := range b.bins {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ps = make([]seqPoint, 0, 4*len(keys))
		for _, k := range keys {
			ps = b.bins[k].appendTo(ps)
		}
	}
	out := make([]Point, len(ps))
	for i, p := range ps {
		out[i] = p.Point
	}
	return out
}
