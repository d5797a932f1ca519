//go:build race

package cpu

// raceEnabled: the race detector's instrumentation in package gemm allocates.
const raceEnabled = true
