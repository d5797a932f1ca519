package cpu

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/tensor"
)

// opToken carries an op's name and start time from lock to unlock while profiling is on.
type opToken struct {
	op    string
	start time.Time
}

type opStat struct {
	calls int
	total time.Duration
}

// lock serialises ops on the backend and, while profiling, starts timing op.
func (b *Backend) lock(op string) opToken {
	b.mu.Lock()
	if b.profile == nil {
		return opToken{}
	}
	return opToken{op: op, start: time.Now()}
}

// lockMatMul is lock with the product's shape in the op name, so a profile tells the
// projections apart.
func (b *Backend) lockMatMul(p tensor.MatMulParams) opToken {
	t := b.lock("MatMul")
	if b.profile != nil {
		ta, tb := "", ""
		if p.TransA {
			ta = "ᵀ"
		}
		if p.TransB {
			tb = "ᵀ"
		}
		t.op = fmt.Sprintf("MatMul %dx%dx%d A%s B%s", p.M, p.N, p.K, ta, tb)
		if p.Batch > 1 {
			t.op += fmt.Sprintf(" batch %d", p.Batch)
		}
	}
	return t
}

func (b *Backend) unlock(t opToken) {
	if t.op != "" {
		s := b.profile[t.op]
		if s == nil {
			s = &opStat{}
			b.profile[t.op] = s
		}
		s.calls++
		s.total += time.Since(t.start)
	}
	b.mu.Unlock()
}

// SetProfiling turns the per-op wall-clock profile on (clearing it) or off. Profiling
// allocates; steady-state steps allocate nothing only with it off.
func (b *Backend) SetProfiling(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.profile = nil
	if on {
		b.profile = map[string]*opStat{}
	}
}

// KernelProfile returns the wall time per op since profiling was turned on, in the Vulkan
// backend's format (tensor.ProfileTable).
func (b *Backend) KernelProfile() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	times := make([]tensor.KernelTime, 0, len(b.profile))
	for name, s := range b.profile {
		times = append(times, tensor.KernelTime{Kernel: name, Count: s.calls, Total: s.total})
	}
	return tensor.ProfileTable(times)
}
