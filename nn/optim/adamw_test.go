package optim

import (
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// With no-decay spans, each parameter is updated bit for bit as a pass with its own weight
// decay would update it: the spans' with none, the rest with the configured one; on the CPU
// and on Vulkan (whose passes then start at unaligned offsets).
func TestNoDecaySpans(t *testing.T) {
	backends := map[string]func(*testing.T) tensor.Backend{
		"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
		"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			be := open(t)
			const n = 1000
			r := rand.New(rand.NewPCG(1, 2))
			p0, g := make([]float32, n), make([]float32, n)
			for i := range p0 {
				p0[i], g[i] = r.Float32()-0.5, r.Float32()-0.5
			}
			spans := []Span{{3, 7}, {500, 1}, {990, 10}}
			run := func(wd float32, noDecay []Span) []float32 {
				cfg := DefaultAdamW()
				cfg.WeightDecay, cfg.MaxGradNorm = wd, 0.5
				o, err := NewAdamW(be, n, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if noDecay != nil {
					if err := o.SetNoDecay(noDecay); err != nil {
						t.Fatal(err)
					}
				}
				params, _ := tensor.FromSlice(be, p0, n)
				grads, _ := tensor.FromSlice(be, g, n)
				for range 3 {
					o.Update(params, grads, 1e-2)
				}
				out, err := tensor.ToHost(params)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			decayed, plain, mixed := run(0.1, nil), run(0, nil), run(0.1, spans)
			exempt := map[int]bool{}
			for _, s := range spans {
				for i := s.Off; i < s.Off+s.N; i++ {
					exempt[i] = true
				}
			}
			for i := range mixed {
				want := decayed[i]
				if exempt[i] {
					want = plain[i]
				}
				if mixed[i] != want {
					t.Fatalf("parameter %d (exempt %v): %v, want %v", i, exempt[i], mixed[i], want)
				}
			}
			if decayed[5] == plain[5] {
				t.Fatal("weight decay changed nothing: the test cannot tell the passes apart")
			}
		})
	}
}

func TestNoDecaySpanOutOfRange(t *testing.T) {
	o, err := NewAdamW(cpu.New(), 10, DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetNoDecay([]Span{{8, 3}}); err == nil {
		t.Error("a span past the parameters was accepted")
	}
}
