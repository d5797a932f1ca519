package optim

import (
	"math"
	"math/rand/v2"
	"strings"
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
				params, grads := flatOf(t, be, p0, n), flatOf(t, be, g, n)
				o, err := NewAdamW(params, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if noDecay != nil {
					if err := o.SetNoDecay(noDecay); err != nil {
						t.Fatal(err)
					}
				}
				for range 3 {
					o.Update(params, grads, 1e-2)
				}
				out, err := params.ToHost()
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
	o, err := NewAdamW(flatOf(t, cpu.New(), make([]float32, 10), 10), DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetNoDecay([]Span{{8, 3}}); err == nil {
		t.Error("a span past the parameters was accepted")
	}
}

// flatOf uploads v to a flat vector of pieces of the given size (the last one shorter).
func flatOf(t *testing.T, be tensor.Backend, v []float32, piece int) *tensor.Flat {
	t.Helper()
	var pieces []int
	for off := 0; off < len(v); off += piece {
		pieces = append(pieces, min(piece, len(v)-off))
	}
	f, err := tensor.NewFlat(be, pieces)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Upload(v); err != nil {
		t.Fatal(err)
	}
	return f
}

// capped is a CPU backend whose allocations hold at most n floats, as a GPU driver bounds them.
type capped struct {
	tensor.Backend
	n int
}

func (c capped) MaxAllocElems() int { return c.n }

// A parameter vector spread over several allocations, with no-decay spans that cross them, is
// updated as one in a single allocation: bit for bit without clipping (each float's update is
// its own), and to float32 rounding with clipping (the norm is summed part by part).
func TestAdamWOverSeveralAllocations(t *testing.T) {
	const n = 1000
	r := rand.New(rand.NewPCG(3, 4))
	p0, g := make([]float32, n), make([]float32, n)
	for i := range p0 {
		p0[i], g[i] = r.Float32()-0.5, r.Float32()-0.5
	}
	run := func(be tensor.Backend, clip float32) ([]float32, int) {
		params, grads := flatOf(t, be, p0, 100), flatOf(t, be, g, 100)
		cfg := DefaultAdamW()
		cfg.WeightDecay, cfg.MaxGradNorm = 0.1, clip
		o, err := NewAdamW(params, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetNoDecay([]Span{{250, 100}, {390, 20}, {999, 1}}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			o.Update(params, grads, 1e-2)
		}
		out, err := params.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		return out, len(params.Parts())
	}
	for _, clip := range []float32{0, 0.5} {
		one, parts1 := run(cpu.New(), clip)
		split, parts := run(capped{cpu.New(), 250}, clip)
		if parts1 != 1 || parts != 5 {
			t.Fatalf("%d and %d allocations, want 1 and 5 (two pieces of 100 to an allocation of 250)", parts1, parts)
		}
		for i := range one {
			if d := math.Abs(float64(one[i] - split[i])); (clip == 0 && d != 0) || d > 1e-6 {
				t.Fatalf("clip %v: parameter %d is %v in one allocation, %v over five", clip, i, one[i], split[i])
			}
		}
	}
	if _, err := tensor.NewFlat(capped{cpu.New(), 250}, []int{100, 300}); err == nil || !strings.Contains(err.Error(), "exceeds the device's largest allocation") {
		t.Errorf("a piece larger than an allocation: %v", err)
	}
}
