package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// countingBackend is a CPU backend that tracks the bytes it has allocated and not freed.
type countingBackend struct {
	*cpu.Backend
	live, peak int64
}

func (b *countingBackend) Alloc(dtype tensor.DType, n int) (tensor.Storage, error) {
	s, err := b.Backend.Alloc(dtype, n)
	if err == nil {
		b.live += int64(n) * 4
		b.peak = max(b.peak, b.live)
	}
	return s, err
}

func (b *countingBackend) Free(s tensor.Storage) {
	b.live -= int64(s.Len()) * 4
	b.Backend.Free(s)
}

// The estimate is what a training step really allocates, full fine-tuning and LoRA alike.
func TestFootprintMatchesAllocations(t *testing.T) {
	for _, lo := range []*LoRAConfig{nil, {Rank: 4, Alpha: 8}} {
		be := &countingBackend{Backend: cpu.New()}
		m, err := Load(be, "testdata/qwen2-tiny")
		if err != nil {
			t.Fatal(err)
		}
		if lo != nil {
			err = m.EnableLoRA(*lo, 1)
		} else {
			err = m.EnableGrads()
		}
		if err != nil {
			t.Fatal(err)
		}
		const B, T = 2, 7
		in := make([]int32, B*T)
		tp := autograd.NewTape()
		if _, err := m.ForwardLoss(tp, in, in, B, T); err != nil {
			t.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		f, err := EstimateFootprint(be, m.Config, B, T, true, lo)
		if err != nil {
			t.Fatal(err)
		}
		got := be.live + f.Optimizer // the optimizer is not allocated here
		if got != f.Total() {
			t.Errorf("LoRA %v: estimate %d bytes (%+v), allocated %d", lo != nil, f.Total(), f, got)
		}
	}
}

// DecoderBytes is what a decoder allocates (the host logits included), with and without LoRA
// adapters.
func TestDecoderBytesMatchesAllocations(t *testing.T) {
	for _, lo := range []*LoRAConfig{nil, {Rank: 3, Alpha: 6}} {
		be := &countingBackend{Backend: cpu.New()}
		m, err := Load(be, "testdata/qwen2-tiny")
		if err != nil {
			t.Fatal(err)
		}
		rank := 0
		if lo != nil {
			if err := m.EnableLoRA(*lo, 1); err != nil {
				t.Fatal(err)
			}
			rank = lo.Rank
		}
		const B, limit = 3, 11
		if err := m.ensureRope(limit); err != nil {
			t.Fatal(err)
		}
		before := be.live
		d, err := m.NewDecoder(B, limit)
		if err != nil {
			t.Fatal(err)
		}
		got := be.live - before + 4*int64(B*m.Config.Vocab) // and the logits on the host
		if want := m.Config.DecoderBytes(B, limit, rank); got != want {
			t.Errorf("LoRA %v: a decoder allocated %d bytes, DecoderBytes says %d", lo != nil, got, want)
		}
		d.Close()
	}
}
