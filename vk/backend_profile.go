package vk

import "github.com/vkgrad/vkgrad/tensor"

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
	return tensor.ProfileTable(b.dev.Profile())
}
