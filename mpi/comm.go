package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Comm is the world communicator of an MPI job. Every MPI call runs on one goroutine locked to
// one OS thread (MPI is initialised for MPI_THREAD_SERIALIZED), so a Comm may be used from any
// goroutine. The methods are collective: every rank must call them in the same order.
type Comm struct {
	lib        *library
	rank, size int

	mu     sync.Mutex
	work   chan func()
	closed bool
}

// Init loads MPI, initialises it and returns the world communicator. Call it once per process.
func Init() (*Comm, error) {
	lib, err := loadLibrary(os.Getenv)
	if err != nil {
		return nil, err
	}
	c := &Comm{lib: lib, work: make(chan func(), queuedCalls)}
	go c.serve()
	err = c.do(func() error {
		if done, err := lib.initialized(); err != nil || done {
			return firstErr(err, errors.New("mpi: MPI is already initialised in this process"))
		}
		if err := lib.initThread(); err != nil {
			return err
		}
		c.rank, c.size, err = lib.rankSize()
		return err
	})
	if err != nil {
		close(c.work)
		return nil, fmt.Errorf("%w (library %s)", err, lib.path)
	}
	return c, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// serve runs MPI calls on one locked OS thread until the work channel closes.
func (c *Comm) serve() {
	runtime.LockOSThread()
	for f := range c.work {
		f()
	}
}

// queuedCalls is how many calls may wait for the MPI thread before post blocks: more than a
// step's gradient buckets, so that the backward pass never waits to queue one.
const queuedCalls = 256

// do runs f on the MPI thread and waits for it.
func (c *Comm) do(f func() error) error {
	return <-c.post(f)
}

// post queues f on the MPI thread and returns at once; the channel receives f's result. Calls
// run one at a time in the order they were posted.
func (c *Comm) post(f func() error) <-chan error {
	done := make(chan error, 1)
	c.work <- func() { done <- f() }
	return done
}

// Rank is this process's index in the job, 0..Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in the job.
func (c *Comm) Size() int { return c.size }

// Library names the MPI implementation and its version line.
func (c *Comm) Library() string { return firstLine(c.lib.version) }

// Close finalises MPI. Every rank must call it; the Comm is unusable afterwards.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	err := c.do(func() error { return c.lib.check("MPI_Finalize", call(c.lib.fn.Finalize)) })
	close(c.work)
	return err
}

// abortWait is how long Abort waits for MPI_Abort to end the process.
const abortWait = 3 * time.Second

// Abort ends every process of the job with code: the way out when one rank fails and the
// others would wait for it in a collective forever. It returns only when MPI could not end
// the job within abortWait (the MPI thread is held by a collective no other rank will join, or
// Close is finalising): the caller must then exit with a non-zero code, which mpirun, mpiexec
// and srun take as the job's failure, ending the other ranks.
func (c *Comm) Abort(code int) {
	if !c.mu.TryLock() {
		return // Close holds the MPI thread in MPI_Finalize
	}
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true // nothing may follow MPI_Abort, Close included
	select {
	case c.work <- func() { call(c.lib.fn.Abort, c.lib.commWorld, uintptr(code)) }:
	default: // the queue is full behind a stuck call
	}
	c.mu.Unlock()
	time.Sleep(abortWait)
}

// Barrier waits until every rank has called it.
func (c *Comm) Barrier() error {
	return c.do(func() error { return c.lib.check("MPI_Barrier", call(c.lib.fn.Barrier, c.lib.commWorld)) })
}

// Broadcast copies root's buf into every rank's buf; the lengths must agree.
func (c *Comm) Broadcast(buf []byte, root int) error {
	n, err := count("MPI_Bcast", len(buf))
	if err != nil {
		return err
	}
	return c.do(func() error {
		return c.lib.check("MPI_Bcast", call(c.lib.fn.Bcast, uintptr(ptr(buf)), n, c.lib.byteT, uintptr(root), c.lib.commWorld))
	})
}

// SumInt64 replaces xs by their element-wise sum over all ranks (integers: exact in any order).
func (c *Comm) SumInt64(xs []int64) error {
	n, err := count("MPI_Allreduce", len(xs))
	if err != nil {
		return err
	}
	return c.do(func() error {
		return c.lib.check("MPI_Allreduce", call(c.lib.fn.Allreduce, c.lib.abi.inPlace, uintptr(ptr(xs)), n, c.lib.int64T, c.lib.opSum, c.lib.commWorld))
	})
}

// GatherInt64 returns every rank's x, in rank order.
func (c *Comm) GatherInt64(x int64) ([]int64, error) {
	out := make([]int64, c.size)
	in := []int64{x}
	err := c.do(func() error {
		return c.lib.check("MPI_Allgather", call(c.lib.fn.Allgather, uintptr(unsafe.Pointer(&in[0])), 1, c.lib.int64T,
			uintptr(unsafe.Pointer(&out[0])), 1, c.lib.int64T, c.lib.commWorld))
	})
	return out, err
}

// GatherFloat64 returns every rank's xs (each rank passes the same length), in rank order.
func (c *Comm) GatherFloat64(xs []float64) ([][]float64, error) {
	n, err := count("MPI_Allgather", len(xs))
	if err != nil {
		return nil, err
	}
	flat := make([]float64, len(xs)*c.size)
	err = c.do(func() error {
		return c.lib.check("MPI_Allgather", call(c.lib.fn.Allgather, uintptr(ptr(xs)), n, c.lib.float64T,
			uintptr(ptr(flat)), n, c.lib.float64T, c.lib.commWorld))
	})
	out := make([][]float64, c.size)
	for r := range out {
		out[r] = flat[r*len(xs) : (r+1)*len(xs)]
	}
	return out, err
}

// GatherBytes returns every rank's buf (of any length), in rank order: each rank broadcasts
// its own in turn.
func (c *Comm) GatherBytes(buf []byte) ([][]byte, error) {
	lens, err := c.GatherInt64(int64(len(buf)))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, c.size)
	for r, n := range lens {
		out[r] = make([]byte, n)
		if r == c.rank {
			copy(out[r], buf)
		}
		if n == 0 {
			continue
		}
		if err := c.Broadcast(out[r], r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SumFloat64 returns the element-wise sum of every rank's xs, added in rank order, so every
// rank gets the same bits whatever the MPI library's reduction algorithm.
func (c *Comm) SumFloat64(xs []float64) ([]float64, error) {
	all, err := c.GatherFloat64(xs)
	if err != nil {
		return nil, err
	}
	out := append([]float64(nil), all[0]...)
	for _, row := range all[1:] {
		for i, v := range row {
			out[i] += v
		}
	}
	return out, nil
}

// CheckSame returns an error naming the ranks whose value differs from rank 0's: used with a
// hash of the parameters, it catches ranks that drifted apart.
func (c *Comm) CheckSame(what string, v uint64) error {
	all, err := c.GatherInt64(int64(v))
	if err != nil {
		return err
	}
	var bad []int
	for r, x := range all {
		if x != all[0] {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("mpi: %s differs between ranks: rank 0 has %016x, ranks %v differ", what, uint64(all[0]), bad)
	}
	return nil
}
