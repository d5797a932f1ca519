package cpu

import (
	"sync/atomic"

	"github.com/vkgrad/vkgrad/internal/workpool"
)

// job is one parallel operation split into numbered chunks. run(w, i) computes chunk i on
// worker w; chunks write disjoint outputs (or per-chunk partials), so which worker runs a
// chunk never changes the result.
type job interface {
	run(w, i int)
}

// pool runs a backend's jobs on at most n goroutines: the caller and the process's shared
// helpers (package workpool), which also run the matrix products. Worker indices are below n,
// so they can index the backend's per-worker scratch.
type pool struct {
	n       int
	cur     job
	nchunks int64
	next    atomic.Int64
}

func newPool(n int) *pool { return &pool{n: n} }

// Work implements workpool.Job: it claims chunks until none are left.
func (p *pool) Work(w int) {
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
	workpool.Run(p, min(p.n-1, n-1))
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
