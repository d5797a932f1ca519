// Package timing times work on a device, grown until it lasts long enough for a clock to read well.
//
// A fast device runs a small piece of work in less time than it takes to submit it and wait for
// it. [Run] times one piece of work up to the point where the device has finished it, and
// [Grow] repeats the work at growing sizes, up to [MaxSize], until a run lasts a given time.
package timing

import "time"

// Run times work and then wait, which blocks until the device has done what work queued, and
// returns the time of both (work's error, if any, without waiting).
func Run(work, wait func() error) (time.Duration, error) {
	start := time.Now()
	if err := work(); err != nil {
		return 0, err
	}
	err := wait()
	return time.Since(start), err
}

// MaxSize bounds the sizes Grow tries.
const MaxSize = 1 << 20

// Grow calls run with sizes growing from 1 until a run lasts at least least (or the size
// reaches MaxSize) and returns that size and that run's time. A first run of size 1 is not
// counted: it may build or page in what later runs reuse (a GPU pipeline), and its time would
// stop the growth too soon. A run too short for the clock to see grows the size 16 times; any
// other by what least asks, at least twice, at most 1024 times.
func Grow(least time.Duration, run func(size int) (time.Duration, error)) (int, time.Duration, error) {
	if _, err := run(1); err != nil {
		return 0, 0, err
	}
	size := 1
	for {
		took, err := run(size)
		if err != nil || took >= least || size >= MaxSize {
			return size, took, err
		}
		grow := 16
		if took > 0 {
			grow = min(int(least/took)+1, 1024)
		}
		size = min(size*max(grow, 2), MaxSize)
	}
}
