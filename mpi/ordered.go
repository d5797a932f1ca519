package mpi

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
// depend on its algorithms or on the number of ranks.
//
// The vectors may be reduced in ranges (buckets): Start queues one range on the MPI thread
// and returns, so a range whose gradients are final is summed while the backward pass still
// computes the others. Each element is added in micro-batch order whichever range holds it,
// so any cut gives the bits of one Sum. Buffers are allocated once.
type Reducer struct {
	c          *Comm // nil: one process, no MPI
	n, K       int
	rank, size int
	first, cnt int   // the micro-batches this rank holds
	firsts     []int // each rank's first micro-batch
	counts     []int // how many each rank holds

	send, recv []float32 // send only when this rank holds several vectors
	pending    []<-chan error

	stats ReduceStats
}

// ReduceStats count what a Reducer moved between ranks: bytes this rank sent (the all-to-all
// and its part of the all-gather), the time the MPI thread spent reducing, whether or not the
// caller's work overlapped it, and the time the caller waited for it in Wait (the part nothing
// hid), over every Sum or range so far.
type ReduceStats struct {
	Sums          int
	BytesSent     int64
	Seconds       float64
	WaitedSeconds float64
}

// Stats returns the Reducer's counts so far; call it after Wait.
func (r *Reducer) Stats() ReduceStats { return r.stats }

// NewReducer prepares the sum of K vectors of n floats. c may be nil: then this process holds
// all K micro-batches and the sum is local, with the same bits as over MPI.
func NewReducer(c *Comm, n, K int) (*Reducer, error) {
	rank, size := 0, 1
	if c != nil {
		rank, size = c.rank, c.size
	}
	if K < size {
		return nil, fmt.Errorf("mpi: %d micro-batches cannot be spread over %d ranks; use at least %d", K, size, size)
	}
	r := &Reducer{c: c, n: n, K: K, rank: rank, size: size, firsts: make([]int, size), counts: make([]int, size)}
	for j := range size {
		r.firsts[j], r.counts[j] = Held(j, K, size)
	}
	r.first, r.cnt = r.firsts[rank], r.counts[rank]
	if c == nil {
		return r, nil
	}
	if r.cnt > 1 {
		r.send = make([]float32, r.cnt*n)
	}
	_, mostMine := span(n, size, 0) // no rank's part of any range is longer than ceil(n/size)
	r.recv = make([]float32, K*(mostMine+1))
	return r, nil
}

// Held returns the micro-batches this rank must compute: first .. first+n-1.
func (r *Reducer) Held() (first, n int) { return r.first, r.cnt }

// Sum writes into dst the sum over all K micro-batches; held are this rank's vectors, in
// micro-batch order.
func (r *Reducer) Sum(dst []float32, held [][]float32) error {
	if err := r.Start(dst, held, 0, r.n, 1); err != nil {
		return err
	}
	return r.Wait()
}

// Start queues the sum over all K micro-batches of elements [lo, hi), times scale, into
// dst[lo:hi], and returns without waiting for it under MPI; held are this rank's vectors, in
// micro-batch order. Until Wait, held[*][lo:hi] must not change and dst[lo:hi] must not be
// read. Every rank must start the same ranges in the same order, and make no other MPI call
// before Wait.
func (r *Reducer) Start(dst []float32, held [][]float32, lo, hi int, scale float32) error {
	if len(held) != r.cnt || len(dst) != r.n {
		return fmt.Errorf("mpi: Reducer got %d vectors into %d floats, want %d vectors (micro-batches %d..%d) of %d", len(held), len(dst), r.cnt, r.first, r.first+r.cnt-1, r.n)
	}
	for i, h := range held {
		if len(h) != r.n {
			return fmt.Errorf("mpi: Reducer: micro-batch %d has %d floats, want %d", r.first+i, len(h), r.n)
		}
	}
	if lo < 0 || lo > hi || hi > r.n {
		return fmt.Errorf("mpi: Reducer: range [%d, %d) outside the %d floats", lo, hi, r.n)
	}
	if r.c == nil {
		parts := make([][]float32, len(held))
		for i, h := range held {
			parts[i] = h[lo:hi]
		}
		sumInOrderScaled(dst[lo:hi], parts, scale)
		r.stats.Sums++
		return nil
	}
	r.pending = append(r.pending, r.c.post(func() error { return r.reduceRange(dst, held, lo, hi, scale) }))
	return nil
}

// Wait waits for every range started so far and returns the first error.
func (r *Reducer) Wait() error {
	start := time.Now()
	defer func() { r.stats.WaitedSeconds += time.Since(start).Seconds() }()
	var first error
	for _, done := range r.pending {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	r.pending = r.pending[:0]
	return first
}

// reduceRange sums [lo, hi) across the ranks; it runs on the MPI thread.
func (r *Reducer) reduceRange(dst []float32, held [][]float32, lo, hi int, scale float32) error {
	start := time.Now()
	m, P := hi-lo, r.size
	myLo, myHi := span(m, P, r.rank)
	mine := myHi - myLo
	// Rank j reduces [lo+a_j, lo+b_j). This rank sends it the part of each held vector, the
	// parts packed by destination; it receives that part of every other rank's micro-batches,
	// in micro-batch order. Its own micro-batches' parts it reads where they are.
	var sc, sd, rc, rd, pc, pd []int
	for j := range P {
		a, b := span(m, P, j)
		sc, sd = append(sc, r.cnt*(b-a)), append(sd, r.cnt*a)
		rc, rd = append(rc, r.counts[j]*mine), append(rd, r.firsts[j]*mine)
		pc, pd = append(pc, b-a), append(pd, a)
	}
	sc[r.rank], rc[r.rank] = 0, 0
	c32 := make([][]int32, 6)
	for i, xs := range [][]int{sc, sd, rc, rd, pc, pd} {
		var err error
		if c32[i], err = counts32("Reducer", xs); err != nil {
			return err
		}
	}
	send := held[0][lo:hi] // one vector is already laid out by destination
	if r.cnt > 1 {
		send = r.pack(held, lo, hi)
	}
	recv := r.recv[:r.K*mine]
	l := r.c.lib
	if err := l.check("MPI_Alltoallv", call(l.fn.Alltoallv,
		uintptr(ptr(send)), uintptr(unsafe.Pointer(&c32[0][0])), uintptr(unsafe.Pointer(&c32[1][0])), l.float32T,
		uintptr(ptr(recv)), uintptr(unsafe.Pointer(&c32[2][0])), uintptr(unsafe.Pointer(&c32[3][0])), l.float32T,
		l.commWorld)); err != nil {
		return err
	}
	parts := make([][]float32, r.K)
	for k := range parts {
		parts[k] = recv[k*mine : (k+1)*mine]
		if k >= r.first && k < r.first+r.cnt {
			parts[k] = held[k-r.first][lo+myLo : lo+myHi]
		}
	}
	sumInOrderScaled(dst[lo+myLo:lo+myHi], parts, scale)
	if err := l.check("MPI_Allgatherv", call(l.fn.Allgatherv, l.abi.inPlace, 0, l.float32T,
		uintptr(ptr(dst[lo:hi])), uintptr(unsafe.Pointer(&c32[4][0])), uintptr(unsafe.Pointer(&c32[5][0])), l.float32T,
		l.commWorld)); err != nil {
		return err
	}
	r.stats.Sums++
	r.stats.Seconds += time.Since(start).Seconds()
	// Everything but this rank's own parts goes out: its held vectors' other parts, then its
	// reduced part to every other rank.
	r.stats.BytesSent += 4 * (int64(r.cnt)*int64(m-mine) + int64(P-1)*int64(mine))
	return nil
}

// pack lays out [lo, hi) of the held vectors in the send buffer: for each other rank, its
// part of each held vector.
func (r *Reducer) pack(held [][]float32, lo, hi int) []float32 {
	for j := range r.size {
		if j == r.rank {
			continue
		}
		a, b := span(hi-lo, r.size, j)
		off := r.cnt * a
		for _, h := range held {
			off += copy(r.send[off:], h[lo+a:lo+b])
		}
	}
	return r.send[:r.cnt*(hi-lo)]
}

// sumInOrder writes xs[0] + xs[1] + ... into dst, adding in index order. Starting from xs[0]
// rather than from zero keeps a -0 gradient -0, as a single backward pass leaves it.
func sumInOrder(dst []float32, xs [][]float32) { sumInOrderScaled(dst, xs, 1) }

// sumInOrderScaled is sumInOrder times scale, the product taken after the last addition (a
// mean's 1/K costs no pass of its own).
func sumInOrderScaled(dst []float32, xs [][]float32, scale float32) {
	copy(dst, xs[0])
	last := len(xs) - 1
	for k := 1; k < last; k++ {
		for i, v := range xs[k][:len(dst)] {
			dst[i] += v
		}
	}
	switch {
	case last > 0 && scale != 1:
		for i, v := range xs[last][:len(dst)] {
			dst[i] = (dst[i] + v) * scale
		}
	case last > 0:
		for i, v := range xs[last][:len(dst)] {
			dst[i] += v
		}
	case scale != 1:
		for i := range dst {
			dst[i] *= scale
		}
	}
}
