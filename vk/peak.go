package vk

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/tensor"
)

var kPeakFMA = Kernel{Shader: "peak_fma", Bindings: 1, Push: 3}

// Peak is what the device does at best, measured by short probes: float32 multiply-adds per
// second on registers, and bytes per second copying a large buffer (read plus write).
type Peak struct {
	GFLOPS, GBps float64
}

// MeasurePeak runs the probes a few times and keeps the best of each, so that a kernel's
// achieved GFLOP/s and GB/s can be read as fractions of what this device does, measured in
// the same run.
func (b *Backend) MeasurePeak() (Peak, error) {
	const groups, iters = 1024, 512
	n := groups * int(b.wg)
	out, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return Peak{}, err
	}
	defer b.Free(out.Storage)
	st := b.view(out, tensor.Float32, "MeasurePeak")
	var peak Peak
	for range 3 {
		w, err := b.dev.Window(st.buf, out.Offset, n)
		if err != nil {
			return Peak{}, err
		}
		start := time.Now()
		k := kPeakFMA
		k.Local = [3]uint32{b.wg, 1, 1}
		push := peakFMAPush{Iters: iters, OffOut: w.First, Seed: 1e-3}
		if err := b.dev.Dispatch(k, [3]uint32{groups, 1, 1}, pushOf(&push), Arg{W: w, Write: true}); err != nil {
			return Peak{}, err
		}
		if err := b.Sync(); err != nil {
			return Peak{}, err
		}
		peak.GFLOPS = max(peak.GFLOPS, float64(n)*32*iters/time.Since(start).Seconds()/1e9)
	}
	bw, err := b.copyBandwidth(64 << 20)
	if err != nil {
		return Peak{}, err
	}
	peak.GBps = bw
	return peak, nil
}

// copyBandwidth copies bytes between two buffers a few times and returns the best GB/s of
// traffic (each byte is read once and written once); the buffers start on a vec4, so the copy
// takes copy_vec4's wide loads and stores, as the fastest kernels do.
func (b *Backend) copyBandwidth(bytes int) (float64, error) {
	n := bytes / 4
	src, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return 0, err
	}
	defer b.Free(src.Storage)
	dst, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return 0, err
	}
	defer b.Free(dst.Storage)
	best := 0.0
	for range 3 {
		start := time.Now()
		b.Copy(dst, src)
		if err := b.Sync(); err != nil {
			return 0, err
		}
		best = max(best, 2*float64(bytes)/time.Since(start).Seconds()/1e9)
	}
	if best == 0 {
		return 0, fmt.Errorf("vk: bandwidth probe measured nothing")
	}
	return best, nil
}
