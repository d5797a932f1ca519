package dist

import (
	"fmt"
	"time"
	"unsafe"
)

// Placement of K micro-batches on P ranks: contiguous runs in micro-batch order, the first
// K%P ranks holding one more. A step's result depends on K only, never on P, because the
// reduction below adds micro-batch gradients in micro-batch order wherever they were computed.

// Held returns the micro-batches rank holds: first, first+1, ..., first+n-1.
func Held(rank, K, P int) (first, n int) {
	q, r := K/P, K%P
	first = rank*q + min(rank, r)
	n = q
	if rank < r {
		n++
	}
	return first, n
}

// span returns the part of n elements that rank j reduces: [lo, hi).
func span(n, P, j int) (lo, hi int) {
	return j * n / P, (j + 1) * n / P
}

// Reducer sums K per-micro-batch vectors of n floats, spread over the ranks, in micro-batch
// order: (((g0 + g1) + g2) + ...) element by element. Each rank sends every rank the part of
// its vectors that rank reduces (an all-to-all), sums its part in order, and every rank
// gathers the parts (an all-gather). The MPI library only moves data, so the bits do not
// depend on its algorithms or on the number of ranks. Buffers are allocated once.
type Reducer struct {
	c          *Comm // nil: one process, no MPI
	n, K       int
	rank, size int
	first, cnt int // the micro-batches this rank holds

	send, recv                                     []float32
	parts                                          [][]float32 // recv cut into the K micro-batches' parts, in micro-batch order
	sendCounts, sendDispls, recvCounts, recvDispls []int32
	partCounts, partDispls                         []int32

	stats ReduceStats
}

// ReduceStats count what a Reducer moved between ranks: bytes this rank sent (the all-to-all
// and its part of the all-gather) and the time spent in MPI, over every Sum so far.
type ReduceStats struct {
	Sums      int
	BytesSent int64
	Seconds   float64
}

// Stats returns the Reducer's counts so far.
func (r *Reducer) Stats() ReduceStats { return r.stats }

// NewReducer prepares the sum of K vectors of n floats. c may be nil: then this process holds
// all K micro-batches and the sum is local, with the same bits as over MPI.
func NewReducer(c *Comm, n, K int) (*Reducer, error) {
	rank, size := 0, 1
	if c != nil {
		rank, size = c.rank, c.size
	}
	if K < size {
		return nil, fmt.Errorf("dist: %d micro-batches cannot be spread over %d ranks; use at least %d", K, size, size)
	}
	r := &Reducer{c: c, n: n, K: K, rank: rank, size: size}
	r.first, r.cnt = Held(rank, K, size)
	if c == nil {
		return r, nil
	}
	mine := func(j int) int { lo, hi := span(n, size, j); return hi - lo }
	sc, sd, rc, rd, pc, pd := make([]int, size), make([]int, size), make([]int, size), make([]int, size), make([]int, size), make([]int, size)
	off, roff := 0, 0
	for j := range size {
		sc[j], sd[j] = r.cnt*mine(j), off
		off += sc[j]
		_, held := Held(j, K, size)
		rc[j], rd[j] = held*mine(rank), roff
		roff += rc[j]
		pc[j], pd[j] = mine(j), j*n/size
	}
	var err error
	for _, f := range []struct {
		dst *[]int32
		src []int
	}{{&r.sendCounts, sc}, {&r.sendDispls, sd}, {&r.recvCounts, rc}, {&r.recvDispls, rd}, {&r.partCounts, pc}, {&r.partDispls, pd}} {
		if *f.dst, err = counts32("Reducer", f.src); err != nil {
			return nil, err
		}
	}
	r.send, r.recv = make([]float32, off), make([]float32, roff)
	m := mine(rank)
	r.parts = make([][]float32, K)
	for k := range r.parts {
		r.parts[k] = r.recv[k*m : (k+1)*m]
	}
	return r, nil
}

// Held returns the micro-batches this rank must compute: first .. first+n-1.
func (r *Reducer) Held() (first, n int) { return r.first, r.cnt }

// Sum writes into dst the sum over all K micro-batches; held are this rank's vectors, in
// micro-batch order.
func (r *Reducer) Sum(dst []float32, held [][]float32) error {
	if len(held) != r.cnt || len(dst) != r.n {
		return fmt.Errorf("dist: Reducer.Sum got %d vectors into %d floats, want %d vectors (micro-batches %d..%d) of %d", len(held), len(dst), r.cnt, r.first, r.first+r.cnt-1, r.n)
	}
	for i, h := range held {
		if len(h) != r.n {
			return fmt.Errorf("dist: Reducer.Sum: micro-batch %d has %d floats, want %d", r.first+i, len(h), r.n)
		}
	}
	if r.c == nil {
		sumInOrder(dst, held)
		return nil
	}
	r.pack(held)
	lo, hi := span(r.n, r.size, r.rank)
	start := time.Now()
	defer func() {
		r.stats.Sums++
		r.stats.Seconds += time.Since(start).Seconds()
		// Everything but this rank's own parts goes out: its held vectors' other parts, then
		// its reduced part to every other rank.
		r.stats.BytesSent += 4 * (int64(r.cnt)*int64(r.n-(hi-lo)) + int64(r.size-1)*int64(hi-lo))
	}()
	return r.c.do(func() error {
		l := r.c.lib
		if err := l.check("MPI_Alltoallv", call(l.fn.Alltoallv,
			uintptr(ptr(r.send)), uintptr(unsafe.Pointer(&r.sendCounts[0])), uintptr(unsafe.Pointer(&r.sendDispls[0])), l.float32T,
			uintptr(ptr(r.recv)), uintptr(unsafe.Pointer(&r.recvCounts[0])), uintptr(unsafe.Pointer(&r.recvDispls[0])), l.float32T,
			l.commWorld)); err != nil {
			return err
		}
		sumInOrder(dst[lo:hi], r.parts)
		return l.check("MPI_Allgatherv", call(l.fn.Allgatherv, l.abi.inPlace, 0, l.float32T,
			uintptr(ptr(dst)), uintptr(unsafe.Pointer(&r.partCounts[0])), uintptr(unsafe.Pointer(&r.partDispls[0])), l.float32T,
			l.commWorld))
	})
}

// pack lays out the send buffer: for each destination rank, its part of each held vector.
func (r *Reducer) pack(held [][]float32) {
	off := 0
	for j := range r.size {
		lo, hi := span(r.n, r.size, j)
		for _, h := range held {
			off += copy(r.send[off:], h[lo:hi])
		}
	}
}

// sumInOrder writes xs[0] + xs[1] + ... into dst, adding in index order. Starting from xs[0]
// rather than from zero keeps a -0 gradient -0, as a single backward pass leaves it.
func sumInOrder(dst []float32, xs [][]float32) {
	copy(dst, xs[0])
	for _, x := range xs[1:] {
		for i, v := range x[:len(dst)] {
			dst[i] += v
		}
	}
}
