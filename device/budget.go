package device

import (
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/tensor"
)

// budgeter is a backend that knows how much memory it may still take (a GPU).
type budgeter interface {
	MemoryBudget() (bytes uint64, source string)
}

// Budget is how much more memory a model on b can take, and where that figure comes from: the
// device's memory budget (or heap size) for a GPU, the process's available RAM for the CPU.
// ok is false where it cannot be told.
func Budget(b tensor.Backend) (bytes uint64, source string, ok bool) {
	if g, isGPU := b.(budgeter); isGPU {
		v, src := g.MemoryBudget()
		return v, src, v > 0
	}
	return sysinfo.AvailableMemory()
}
