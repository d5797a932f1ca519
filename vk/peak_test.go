package vk

import (
	"testing"
	"time"
)

// TestMeasurePeak: the probes run and give plausible numbers (a device does at least a few
// GFLOP/s and GB/s, and no CPU device reaches a petaflop).
func TestMeasurePeak(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	p, err := b.MeasurePeak()
	if err != nil {
		t.Fatal(err)
	}
	if !(p.GFLOPS > 1 && p.GFLOPS < 1e7 && p.GBps > 0.5 && p.GBps < 1e5) {
		t.Errorf("peak %+v", p)
	}
	t.Logf("%s: %.1f GFLOP/s, %.1f GB/s", b.Name(), p.GFLOPS, p.GBps)
}

// TestTimedRunsGrowsShortProbes: a probe whose first size runs in a microsecond (a fast GPU's
// case) is grown until a run lasts the least time asked, timed three times at that size, and
// the shortest time is kept; a slowed run that stopped the growth too early is grown past;
// one whose runs the clock cannot see is an error.
func TestTimedRunsGrowsShortProbes(t *testing.T) {
	var sizes []int
	slow := map[int]bool{} // the first run at the final size is slowed, as by a busy machine
	r, err := timedRuns(time.Millisecond, func(size int) (time.Duration, error) {
		sizes = append(sizes, size)
		took := time.Duration(size) * time.Microsecond
		if size > 1 && !slow[size] {
			slow[size] = true
			took *= 3
		}
		return took, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.size < 1000 || r.took < time.Millisecond || r.took != time.Duration(r.size)*time.Microsecond {
		t.Errorf("settled on %+v after sizes %v; want at least 1000 runs of 1µs, the fastest time kept", r, sizes)
	}
	if n := len(sizes); n < 4 || sizes[n-1] != r.size || sizes[n-2] != r.size || sizes[n-3] != r.size {
		t.Errorf("sizes %v: want growth, then three runs at the final size", sizes)
	}
	// The CI case: the run that stopped the growth was slowed past least, the two after it
	// were a tenth of it; the size grows again instead of keeping a run far under least.
	sizes = nil
	r, err = timedRuns(time.Millisecond, func(size int) (time.Duration, error) {
		sizes = append(sizes, size)
		took := time.Duration(size) * 10 * time.Microsecond
		if len(sizes) == 2 { // the first timed run, at size 1
			took = 2 * time.Millisecond
		}
		return took, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.took < time.Millisecond/2 {
		t.Errorf("settled on %+v after sizes %v; want a run of at least half a millisecond", r, sizes)
	}
	if _, err := timedRuns(time.Millisecond, func(int) (time.Duration, error) { return 0, nil }); err == nil {
		t.Error("runs that take no time gave no error")
	}
}

// TestProbesLastTheLeastTime: on the device, each probe grows its work until a run lasts the
// time asked. The run kept is the shortest of three at that size, so a busy machine may leave it
// a little under; never by half. How the size grows is TestTimedRunsGrowsShortProbes' concern: on a busy machine
// lavapipe's FMA probe may last long enough at its first size.
func TestProbesLastTheLeastTime(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	const least = 150 * time.Millisecond
	gflops, fma, err := b.fmaRate(least)
	if err != nil {
		t.Fatal(err)
	}
	gbps, cp, err := b.copyRate(16<<20, least)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []probeRun{fma, cp} {
		if r.took < least/2 {
			t.Errorf("probe run %+v: want about %v", r, least)
		}
	}
	t.Logf("FMA %.1f GFLOP/s at %d x 512 rounds, copy %.1f GB/s at %d copies of 16 MiB", gflops, fma.size, gbps, cp.size)
}
