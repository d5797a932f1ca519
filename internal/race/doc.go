// Package race says whether the program was built with the race detector, which allocates for
// its own bookkeeping and makes sync.Pool drop items at random: tests that count allocations
// skip their counts under it.
package race
