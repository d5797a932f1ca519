//go:build race

package gemm

// The race detector makes sync.Pool drop items at random, so allocation counts mean nothing.
const raceEnabled = true
