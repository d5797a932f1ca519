package cpu

import (
	"sync"
	"sync/atomic"

	"github.com/vkgrad/vkgrad/internal/spinwait"
)

// job is one parallel operation split into numbered chunks. run(w, i) computes chunk i on
// worker w; chunks write disjoint outputs (or per-chunk partials), so which worker runs a
// chunk never changes the result.
type job interface {
	run(w, i int)
}

// pool is a fixed set of persistent workers. Jobs are handed over through pre-made channels
// and an interface holding a pointer, so dispatching allocates nothing.
type pool struct {
	n       int
	once    sync.Once
	wake    []chan struct{}
	done    sync.WaitGroup
	cur     job
	nchunks int64
	next    atomic.Int64
	live    atomic.Int32 // running helpers, for tests
}

func newPool(n int) *pool {
	p := &pool{n: n, wake: make([]chan struct{}, n)}
	for w := 1; w < n; w++ {
		p.wake[w] = make(chan struct{}, 1)
		p.live.Add(1) // counted before the goroutine starts, so tests see it at once
		go p.loop(w)
	}
	return p
}

func (p *pool) loop(w int) {
	defer p.live.Add(-1)
	for {
		if _, ok := spinwait.Receive(p.wake[w], spinwait.Window); !ok {
			return
		}
		p.work(w)
		p.done.Done()
	}
}

func (p *pool) work(w int) {
	for {
		i := p.next.Add(1) - 1
		if i >= p.nchunks {
			return
		}
		p.cur.run(w, int(i))
	}
}

// do runs chunks 0..n-1 of j on the calling goroutine (worker 0) and the helpers.
func (p *pool) do(j job, n int) {
	if n <= 0 {
		return
	}
	if n == 1 || p.n == 1 {
		for i := 0; i < n; i++ {
			j.run(0, i)
		}
		return
	}
	p.cur = j
	p.nchunks = int64(n)
	p.next.Store(0)
	k := min(p.n-1, n-1)
	p.done.Add(k)
	for w := 1; w <= k; w++ {
		p.wake[w] <- struct{}{}
	}
	p.work(0)
	p.done.Wait()
	p.cur = nil
}

// minParallelWork is the least work (in multiply-adds or element visits) worth waking
// workers for; a wake-up costs microseconds.
const minParallelWork = 1 << 16

// doWork is do for a job whose total work is known: small jobs run on the caller alone. The
// chunks are the same either way, so the results are too.
func (p *pool) doWork(j job, n, work int) {
	if work < minParallelWork {
		for i := 0; i < n; i++ {
			j.run(0, i)
		}
		return
	}
	p.do(j, n)
}

// close stops the helpers; it may be called more than once.
func (p *pool) close() {
	p.once.Do(func() {
		for w := 1; w < p.n; w++ {
			close(p.wake[w])
		}
	})
}
