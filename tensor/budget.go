package tensor

import (
	"fmt"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
)

// Budgeter is a backend that knows how much more memory it may take: a GPU's budget or heap,
// the process's available RAM.
type Budgeter interface {
	MemoryBudget() (bytes uint64, source string)
}

// Budget is how much more memory b can take and where that figure comes from; ok is false
// where it cannot be told. A backend that is not a Budgeter is assumed to use host memory.
func Budget(b Backend) (bytes uint64, source string, ok bool) {
	if g, is := b.(Budgeter); is {
		v, src := g.MemoryBudget()
		return v, src, v > 0
	}
	return sysinfo.AvailableMemory()
}

// CheckFits returns an error when what, needing need bytes, cannot fit in what b has left,
// saying both; nil when it fits or the budget cannot be told. Callers check before a large
// allocation, so a too-large request is an error, not the process running out of memory.
func CheckFits(b Backend, need int64, what string) error {
	if need <= 0 {
		return nil
	}
	budget, source, ok := Budget(b)
	if !ok || need <= int64(budget) {
		return nil
	}
	return fmt.Errorf("%s needs %s, and %s has %s available (%s)", what, HumanBytes(need), b.Name(), HumanBytes(int64(budget)), source)
}

// HumanBytes formats a byte count for people: GiB, MiB or KiB with a decimal, or bytes.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
