package workpool

import (
	"runtime"
	"time"
)

// spinWindow is how long a helper polls for its next job before it sleeps. Waking a sleeping
// goroutine on an idle core takes tens of microseconds (the runtime must wake an OS thread),
// a large share of a sub-millisecond parallel operation; a polling helper joins in about a
// microsecond. The window spans the gaps between the parallel operations of a training step,
// and an idle process stops using CPU almost at once.
const spinWindow = 100 * time.Microsecond

// receive returns the next value from ch, and false if ch is closed, like a receive. For up
// to window it polls, yielding the processor between polls so other goroutines still run;
// then it blocks.
func receive[T any](ch <-chan T, window time.Duration) (T, bool) {
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
