package vk

import "math"

// SetProfiling turns per-kernel GPU timing on or off for the device (from the next command
// buffer) and clears earlier times when turning it on. On a device whose compute queue has no
// timestamps it does nothing, and KernelProfile says so.
func (b *Backend) SetProfiling(on bool) {
	if b.dev.Info.TimestampBits == 0 {
		return
	}
	b.setErr(b.dev.SetProfiling(on))
	if on {
		b.dev.ResetProfile()
	}
}

// KernelProfile waits for queued work and returns the GPU time per kernel since profiling was
// turned on: one entry per kernel name with kernel, calls, total_ms, mean_us and share (of the
// summed kernel time), largest first.
func (b *Backend) KernelProfile() []map[string]any {
	if b.dev.Info.TimestampBits == 0 {
		return []map[string]any{{"kernel": "(none)", "error": b.dev.Info.Name + " has no timestamps on its compute queue"}}
	}
	b.setErr(b.dev.Sync()) // timestamps are read when a command buffer completes
	entries := b.dev.Profile()
	var total float64
	for _, e := range entries {
		total += float64(e.Total)
	}
	out := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		ns := float64(e.Total)
		share := 0.0
		if total > 0 {
			share = ns / total
		}
		out = append(out, map[string]any{
			"kernel":   e.Kernel,
			"calls":    e.Count,
			"total_ms": profileRound(ns / 1e6),
			"mean_us":  profileRound(ns / 1e3 / float64(max(e.Count, 1))),
			"share":    profileRound(share),
		})
	}
	return out
}

func profileRound(x float64) float64 { return math.Round(x*1000) / 1000 }
