//go:build race

package workpool

// The race detector allocates for its own bookkeeping, so allocation counts mean nothing.
const raceEnabled = true
