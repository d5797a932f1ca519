// Package spinwait lets a worker goroutine wait for its next job without going to sleep at
// once. Waking a sleeping goroutine on an idle core takes tens of microseconds (the runtime
// must wake an OS thread), which is a large share of a sub-millisecond parallel operation; a
// worker that polls for a short while after each job is picked up in about a microsecond.
package spinwait

import (
	"runtime"
	"time"
)

// Window is how long a worker polls before it sleeps: long enough to span the gap between
// the parallel operations of a training step, short enough that an idle process stops using
// CPU almost at once.
const Window = 100 * time.Microsecond

// Receive returns the next value from ch, and false if ch is closed, like a receive. For up
// to window it polls, yielding the processor between polls so other goroutines still run;
// then it blocks.
func Receive[T any](ch <-chan T, window time.Duration) (T, bool) {
	if window > 0 {
		deadline := time.Now().Add(window)
		for {
			select {
			case v, ok := <-ch:
				return v, ok
			default:
			}
			if !time.Now().Before(deadline) {
				break
			}
			runtime.Gosched()
		}
	}
	v, ok := <-ch
	return v, ok
}
