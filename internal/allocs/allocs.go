// Package allocs measures heap allocations in tests that pin them at zero.
package allocs

import "testing"

// PerRun is testing.AllocsPerRun measured up to three times, returning the smallest. Calls
// into the Vulkan driver take their frames from a sync.Pool, which a garbage collection during
// a measurement empties, so a refill can be counted once; an allocation that every call makes
// shows in every attempt.
func PerRun(runs int, f func()) float64 {
	best := testing.AllocsPerRun(runs, f)
	for i := 0; i < 2 && best > 0; i++ {
		best = min(best, testing.AllocsPerRun(runs, f))
	}
	return best
}
