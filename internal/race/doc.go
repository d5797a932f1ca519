// Package race reports whether the program was built with the race detector.
//
// Tests that count allocations check [Enabled] and skip their counts under the race detector,
// which allocates for its own bookkeeping and makes [sync.Pool] drop items at random.
package race
