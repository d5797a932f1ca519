package vk

import "testing"

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
