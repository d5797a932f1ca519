package vk

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/internal/timing"
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
	gflops, err := b.PeakGFLOPS()
	if err != nil {
		return Peak{}, err
	}
	gbps, err := b.PeakGBps()
	if err != nil {
		return Peak{}, err
	}
	return Peak{GFLOPS: gflops, GBps: gbps}, nil
}

// PeakGFLOPS runs the multiply-add probe alone (MeasurePeak's GFLOPS): the rate a whole
// training step's FLOPs are read against.
func (b *Backend) PeakGFLOPS() (float64, error) {
	gflops, _, err := b.fmaRate(probeTime)
	return gflops, err
}

// PeakGBps runs the copy probe alone (MeasurePeak's GBps): the rate decoding, bound by reading
// the weights, is read against.
func (b *Backend) PeakGBps() (float64, error) {
	gbps, _, err := b.copyRate(b.copyProbeBytes(), probeTime)
	return gbps, err
}

// probeTime is the least time a probe's timed run lasts. A fast GPU does the probes' first
// sizes (4.3 GFLOP; 256 MiB of copy traffic) in well under a millisecond, where submitting
// and waiting would be much of what is timed, so each probe grows its work until a run
// lasts this long. Lavapipe's first sizes already take longer.
const probeTime = 25 * time.Millisecond

// probeRun is the size a probe settled on (in multiples of its first size) and the shortest
// time of its runs at that size.
type probeRun struct {
	size int
	took time.Duration
}

// timedRuns grows run's size until a run lasts at least least (timing.Grow), runs it twice
// more at that size, and returns the size and the shortest of those three times (an error
// if that is zero). A busy moment can stretch the run that stopped the growth, leaving the
// other two far shorter than least; then the size grows by what the shortest asks and is
// timed again, a few times at most.
func timedRuns(least time.Duration, run func(size int) (time.Duration, error)) (probeRun, error) {
	const regrowths = 3
	size, took, err := timing.Grow(least, run)
	if err != nil {
		return probeRun{}, err
	}
	for tries := 0; ; tries++ {
		r, err := shortestOfThree(size, took, run)
		if err != nil {
			return probeRun{}, err
		}
		if r.took <= 0 {
			return probeRun{}, fmt.Errorf("vk: a probe ran %d times its first size in no measurable time", r.size)
		}
		if r.took >= least/2 || size >= timing.MaxSize || tries == regrowths {
			return r, nil
		}
		size = min(size*(int(least/r.took)+1), timing.MaxSize)
		if took, err = run(size); err != nil {
			return probeRun{}, err
		}
	}
}

// shortestOfThree runs run twice more at size, after a first run that took took, and returns
// the shortest of the three times.
func shortestOfThree(size int, took time.Duration, run func(size int) (time.Duration, error)) (probeRun, error) {
	r := probeRun{size: size, took: took}
	for range 2 {
		took, err := run(size)
		if err != nil {
			return probeRun{}, err
		}
		r.took = min(r.took, took)
	}
	return r, nil
}

// fmaRate is peak_fma's best rate in GFLOP/s: 1024 workgroups whose invocations each run
// 512*size rounds of 16 multiply-adds.
func (b *Backend) fmaRate(least time.Duration) (float64, probeRun, error) {
	const groups, iters = 1024, 512
	n := groups * int(b.wg)
	k := kPeakFMA
	k.Local = [3]uint32{b.wg, 1, 1}
	return b.arithmeticRate(k, groups, n, iters, float64(n)*32, least)
}

var kPeakCoopMat = Kernel{Shader: "peak_coopmat", Bindings: 1, Push: 3}

// peakCoopMatKHR is the probe on VK_KHR_cooperative_matrix.
const peakCoopMatKHR = "peak_coopmat_khr"

// PeakCoopMatGFLOPS is the device's cooperative-matrix rate (float16 operands, float32 sums)
// in GFLOP/s, what products in fp16 are read against; an error where the device has no
// cooperative-matrix kernel. 2048 workgroups of 4 subgroups each run 64*size rounds of 8
// products of the kernel's shape, on the kernel's extension.
func (b *Backend) PeakCoopMatGFLOPS() (float64, error) {
	cm := b.coopMatKernel()
	if cm == nil {
		return 0, fmt.Errorf("vk: no cooperative-matrix rate to probe: %w", b.dev.coopMatErr)
	}
	const groups, iters, subgroups = 2048, 64, 4
	s := cm.shape
	k := kPeakCoopMat
	if cm.khr {
		k.Shader = peakCoopMatKHR
	}
	k.Local = [3]uint32{subgroups * cm.sg, 1, 1}
	k.Spec = [maxSpec]uint32{s.M, s.N, s.K}
	info := b.dev.Info // the kernel's subgroup size, which the KHR one picks (coopMatKHRKernelFor)
	info.SubgroupSize = cm.sg
	k.SubgroupSize = pinnedSubgroupSize(info, k.Local[0])
	n := groups * subgroups * 8 * int(s.M*s.N)
	perRound := float64(groups*subgroups) * 8 * 2 * float64(s.M*s.N*s.K)
	gflops, _, err := b.arithmeticRate(k, groups, n, iters, perRound, probeTime)
	return gflops, err
}

// arithmeticRate times k, a probe taking peakFMAPush that runs iters*size rounds of
// register arithmetic over groups workgroups and writes n floats, and returns its best rate
// in GFLOP/s, each round doing flopsPerRound over the whole dispatch.
func (b *Backend) arithmeticRate(k Kernel, groups, n, iters int, flopsPerRound float64, least time.Duration) (float64, probeRun, error) {
	out, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return 0, probeRun{}, err
	}
	defer b.Free(out.Storage)
	st := b.view(out, tensor.Float32, "MeasurePeak")
	run, err := timedRuns(least, func(size int) (time.Duration, error) {
		w, err := b.dev.Window(st.buf, out.Offset, n)
		if err != nil {
			return 0, err
		}
		push := peakFMAPush{Iters: uint32(iters * size), OffOut: w.First, Seed: 1e-3}
		return timing.Run(func() error {
			return b.dev.Dispatch(k, [3]uint32{uint32(groups), 1, 1}, pushOf(&push), Arg{W: w, Write: true})
		}, b.Sync)
	})
	if err != nil {
		return 0, probeRun{}, err
	}
	return flopsPerRound * float64(iters*run.size) / run.took.Seconds() / 1e9, run, nil
}

// copyProbeBytes is the size of each of the bandwidth probe's two buffers: 128 MiB, more
// than the last-level caches of most GPUs hold with its twin, unless a quarter of the memory
// budget or the largest allocation is less.
func (b *Backend) copyProbeBytes() int {
	budget, _ := b.MemoryBudget()
	bytes := min(uint64(128<<20), budget/4, b.dev.Info.AllocationLimit())
	return int(max(bytes, 1<<20)) &^ 15
}

// copyRate copies bytes between two buffers, size times back to back in one submission, and
// returns the best GB/s of traffic (each byte is read once and written once); the buffers
// start on a vec4, so the copy takes copy_vec4's wide loads and stores, as the fastest
// kernels do.
func (b *Backend) copyRate(bytes int, least time.Duration) (float64, probeRun, error) {
	n := bytes / 4
	src, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return 0, probeRun{}, err
	}
	defer b.Free(src.Storage)
	dst, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		return 0, probeRun{}, err
	}
	defer b.Free(dst.Storage)
	run, err := timedRuns(least, func(size int) (time.Duration, error) {
		return timing.Run(func() error {
			for range size {
				b.Copy(dst, src)
			}
			return nil
		}, b.Sync)
	})
	if err != nil {
		return 0, probeRun{}, err
	}
	return 2 * float64(bytes) * float64(run.size) / run.took.Seconds() / 1e9, run, nil
}
