// Package workpool runs parallel CPU work on one set of helper goroutines shared by the process.
//
// A [Job] splits itself into pieces that any goroutine may claim, typically from an atomic
// counter; [Run] offers it to helpers and works on it from the calling goroutine too. A helper
// that has not joined by the time the caller runs out of pieces is not waited for, so a job
// never waits on a core that another process has taken. [Helpers] reports how many helpers
// have been started.
//
// The matrix products and the element-wise operations share these helpers, polling one queue:
// two pools each polling their own queue starve each other, since a polling helper keeps its
// processor and the other pool's helper, queued behind the caller, waits until the caller
// blocks.
package workpool

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Job is work that claims its own pieces until none are left. Work is called once on the
// calling goroutine with w = 0 and once on each helper that joins, with w = 1, 2, ... in the
// order they join; w is below 1 + the helpers asked for, so it can index per-worker scratch.
type Job interface {
	Work(w int)
}

// Run runs job on the calling goroutine and on up to helpers pool goroutines (no more than
// GOMAXPROCS-1), and returns
// once every goroutine that took part has returned from Work. It allocates nothing in steady
// state.
func Run(job Job, helpers int) {
	// Helpers beyond the processors Go runs on could only take turns with each other.
	helpers = min(helpers, runtime.GOMAXPROCS(0)-1)
	if helpers <= 0 {
		job.Work(0)
		return
	}
	startHelpers(helpers)
	c := getCall()
	c.job = job
	c.joined.Store(0)
	for range helpers {
		tk := getToken()
		if tk == nil {
			break
		}
		tk.call = c
		tk.state.Store(tokenPending)
		c.tokens = append(c.tokens, tk)
		c.wg.Add(1)
		queue <- tk
	}
	job.Work(0)
	// Every piece is claimed. A helper that has not joined yet (its core busy with something
	// else) is not waited for: cancelling its token hands the token to it.
	for i, tk := range c.tokens {
		if tk.state.CompareAndSwap(tokenPending, tokenCancelled) {
			c.wg.Done()
			c.tokens[i] = nil
		}
	}
	c.wg.Wait()
	for i, tk := range c.tokens {
		if tk != nil {
			putToken(tk)
		}
		c.tokens[i] = nil
	}
	c.tokens = c.tokens[:0]
	c.job = nil
	putCall(c)
}

// Helpers reports how many helper goroutines the process has started: the most any Run has
// asked for, never more.
func Helpers() int { return int(nHelpers.Load()) }

// call is one Run: the job, the count of helpers that joined, and the tokens that asked them.
type call struct {
	job    Job
	joined atomic.Int32
	wg     sync.WaitGroup
	tokens []*token // kept across calls to reuse the slice
}

// A token asks one helper to join a call. The caller cancels it if no helper has taken it by
// the time the pieces run out. Whoever ends a token's use recycles it: the helper when it
// finds the token cancelled, the caller after waiting for a helper that joined.
type token struct {
	call  *call
	state atomic.Int32
}

const (
	tokenPending = iota
	tokenStarted
	tokenCancelled
)

// Free lists as buffered channels rather than sync.Pool: an item put on one P is invisible to
// a Get on another until moved to the shared list, so calls that hop threads would allocate.
var (
	freeCalls  = make(chan *call, 64)
	freeTokens = make(chan *token, 256)
	tokensMade atomic.Int32
)

func getCall() *call {
	select {
	case c := <-freeCalls:
		return c
	default:
		return new(call)
	}
}

func putCall(c *call) {
	select {
	case freeCalls <- c:
	default:
	}
}

// getToken returns a free token, or nil when every token made is out: then the helpers are
// so far behind (their cores taken by other processes) that asking them again only adds
// waiting, and the call recruits fewer of them. The cap bounds the allocations made while
// late helpers still hold their tokens, and keeps the queue from filling.
func getToken() *token {
	select {
	case tk := <-freeTokens:
		return tk
	default:
	}
	if tokensMade.Add(1) > min(4*(nHelpers.Load()+1), int32(cap(queue))) {
		tokensMade.Add(-1)
		return nil
	}
	return new(token)
}

func putToken(tk *token) {
	tk.call = nil
	select {
	case freeTokens <- tk:
	default:
	}
}

// The helpers serve the queue for the life of the process, so a Run starts no goroutines.
var (
	helpersMu sync.Mutex
	nHelpers  atomic.Int32
	queue     = make(chan *token, 256)
)

func startHelpers(n int) {
	if int(nHelpers.Load()) >= n {
		return
	}
	helpersMu.Lock()
	defer helpersMu.Unlock()
	for ; int(nHelpers.Load()) < n; nHelpers.Add(1) {
		go helper()
	}
}

func helper() {
	for {
		tk, ok := receive(queue, spinWindow)
		if !ok {
			return
		}
		if !tk.state.CompareAndSwap(tokenPending, tokenStarted) {
			putToken(tk)
			continue
		}
		c := tk.call
		c.job.Work(int(c.joined.Add(1)))
		c.wg.Done()
	}
}
