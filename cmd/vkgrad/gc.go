package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target growth when GOGC is not set. A run's heap is a
// few large tensors that live as long as it does and hold no pointers, so a collection is
// cheap; Go's default of 100 lets freed buffers and each step's garbage (a rollout's decoder,
// a checkpoint's host copies) grow the heap by as much as all of them before one runs, which
// on the CPU is resident memory.
const gcPercent = 20

// tuneGC sets the collector's target to gcPercent unless GOGC chooses one, and returns the
// target in force.
func tuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
