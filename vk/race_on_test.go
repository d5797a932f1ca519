//go:build race

package vk

// raceEnabled: under the race detector sync.Pool drops a quarter of what is put back, so
// purego's calls, which take their argument block from a pool, allocate.
const raceEnabled = true
