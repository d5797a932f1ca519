// Package bench times training steps, matrix products, decoding and RL steps on a backend.
//
// Each benchmark returns its report as a map of JSON-ready values: [Train], [Matmul], [Sample]
// and [RL]; [WriteText] lays a report out for a person.
package bench

import (
	"math"
	"runtime"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
	"github.com/vkgrad/vkgrad/vk"
)

// Shape is the model a benchmark builds with random weights: a Llama-family one, or GPT-2's.
type Shape struct {
	GPT2    gpt2.Config
	Llama   llama.Config
	IsLlama bool
	// LoRARank, for a Llama-family shape, trains (or samples with) LoRA adapters of this rank
	// instead of every weight; 0 for none.
	LoRARank int
}

// Context is the longest sequence the shape takes; 0 when a Llama-family preset names none.
func (s Shape) Context() int {
	if s.IsLlama {
		return s.Llama.MaxPositions
	}
	return s.GPT2.MaxSeqLen
}

// newRandomLlama makes a preset's model with random weights, and its LoRA adapters when rank
// is positive.
func newRandomLlama(be tensor.Backend, cfg llama.Config, loraRank int) (*llama.Model, error) {
	m, err := llama.New(be, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, err
	}
	if loraRank > 0 {
		return m, m.EnableLoRA(llama.LoRAConfig{Rank: loraRank, Alpha: 2 * float64(loraRank)}, 1)
	}
	return m, nil
}

// newRandomGPT2 makes a GPT-2 of cfg with random weights.
func newRandomGPT2(be tensor.Backend, cfg gpt2.Config) (*gpt2.Model, error) {
	m, err := gpt2.New(be, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, err
	}
	return m, nil
}

// recordStats is a Vulkan backend's count of dispatches, barriers, queue submissions and
// descriptor-set writes so far; nil on the CPU.
func recordStats(be tensor.Backend) *vk.RecordStats {
	v, ok := be.(*vk.Backend)
	if !ok {
		return nil
	}
	s := v.Device().RecordStats()
	return &s
}

// peak measures the device's multiply-add peak in this process: the CPU's FMA rate on its
// threads, or a Vulkan device's probe (threads 0); 0 where it cannot be measured.
func peak(be tensor.Backend) (gflops float64, threads int) {
	switch b := be.(type) {
	case *cpu.Backend:
		return gemm.PeakGFLOPS(b.Threads()), b.Threads()
	case *vk.Backend:
		g, err := b.PeakGFLOPS()
		if err != nil {
			return 0, 0
		}
		return g, 0
	}
	return 0, 0
}

// readBandwidth is the memory bandwidth decoding is read against, in bytes per second: a
// Vulkan device's copy probe (bytes read and written), else the host's read rate over all
// cores; reading a GPU's decoding against host memory once gave fractions above 1.
func readBandwidth(be tensor.Backend) float64 {
	if b, ok := be.(*vk.Backend); ok {
		if gbps, err := b.PeakGBps(); err == nil && gbps > 0 {
			return gbps * 1e9
		}
	}
	return sysinfo.ReadBandwidth(512 << 20)
}

// coopMatPeak is a Vulkan device's cooperative-matrix rate in GFLOP/s (the 16-bit products'
// peak), 0 where it has none.
func coopMatPeak(be tensor.Backend) float64 {
	if b, ok := be.(*vk.Backend); ok {
		if g, err := b.PeakCoopMatGFLOPS(); err == nil {
			return g
		}
	}
	return 0
}

// setCoopMatPeak records the device's cooperative-matrix rate beside the float32 one, and
// achieved (GFLOP/s) as a fraction of it, where the device has one.
func setCoopMatPeak(rep map[string]any, cm, achieved float64) {
	if cm > 0 {
		rep["peak_coopmat_gflops"] = cm
		rep["coopmat_peak_fraction"] = achieved / cm
	}
}

// setPeak records the peak a report's fractions are read against, and the CPU threads it
// was measured on (none for a Vulkan device).
func setPeak(rep map[string]any, be tensor.Backend, gflops float64, threads int) {
	rep["peak_gflops"] = gflops
	if threads > 0 {
		rep["peak_threads"] = threads
	}
	if _, ok := be.(*cpu.Backend); ok {
		// The kernel set decides the peak (AVX-512 doubles AVX2's), and GODEBUG can switch it.
		rep["peak_kernel"] = gemm.KernelName()
	}
}

// settle runs a garbage collection before a timed region: a cycle started by the setup's
// allocations would otherwise run concurrently and take a core from the measurement.
func settle() { runtime.GC() }

// StartProfile (re)starts the per-kernel profile when on, after warm-up so it covers measured
// work only.
func StartProfile(be tensor.Backend, on bool) error {
	if p, ok := be.(tensor.Profiler); ok && on {
		if err := be.Sync(); err != nil {
			return err
		}
		p.SetProfiling(true)
	}
	return nil
}

// KernelProfile is the time per kernel since [StartProfile], each kernel's share of the
// device's peak, and the peak; a sentence where the backend times no kernels.
func KernelProfile(be tensor.Backend) any {
	p, ok := be.(tensor.Profiler)
	if !ok {
		return "kernel timing needs a Vulkan device"
	}
	rows := p.KernelProfile()
	prober, ok := be.(interface{ MeasurePeak() (vk.Peak, error) })
	if !ok {
		return rows
	}
	peak, err := prober.MeasurePeak()
	if err != nil {
		return rows
	}
	// Each kernel's share of what the device does at best: of its multiply-add rate or its
	// memory bandwidth, whichever the kernel comes closer to (its roofline).
	for _, r := range rows {
		frac := 0.0
		if g := toFloat(r["gflops"]); g > 0 {
			frac = g / peak.GFLOPS
		}
		if b := toFloat(r["gbps"]); b > 0 {
			frac = max(frac, b/peak.GBps)
		}
		if frac > 0 {
			r["of_peak"] = math.Round(frac*1000) / 1000
		}
	}
	return append(rows, map[string]any{"kernel": "(device peak)", "gflops": math.Round(peak.GFLOPS*10) / 10, "gbps": math.Round(peak.GBps*10) / 10})
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}
