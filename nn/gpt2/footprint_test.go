package gpt2

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestFootprintIsWhatTheModelAllocates: the estimate's activations equal the floats a training
// forward actually lays out, and parameters the model's.
func TestFootprintIsWhatTheModelAllocates(t *testing.T) {
	cfg := Config{MaxSeqLen: 32, VocabSize: 50, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 2, Channels: 16}
	be := cpu.New()
	const B, T = 3, 20
	f, err := EstimateFootprint(be, cfg, B, T, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForwardLoss(autograd.NewTape(), make([]int32, B*T), make([]int32, B*T), B, T); err != nil {
		t.Fatal(err)
	}
	a := m.acts
	got := 4 * int64(a.values.len()+a.grads.len()+a.headValues.len()+a.headGrads.len()+3*B*T)
	if f.Activations != got {
		t.Errorf("estimated activations %d bytes, allocated %d", f.Activations, got)
	}
	if f.Params != 4*int64(m.Params.Len()) || f.Optimizer != 2*f.Params || f.Total() != f.Params*4+f.Activations {
		t.Errorf("footprint %+v", f)
	}
	if b := LargestBatch(be, cfg, T, 1000, true, f.Total()); b != B {
		t.Errorf("largest batch within this footprint = %d, want %d", b, B)
	}
	// GPT-2 124M at B=4, T=1024 for training: about 0.5 GB of weights times four, and tens of
	// GB of activations are well known orders of magnitude.
	big, err := EstimateFootprint(be, mustPreset(t, "gpt2-124m"), 4, 1024, true)
	if err != nil {
		t.Fatal(err)
	}
	if big.Params < 490e6 || big.Params > 510e6 || big.Activations < 4<<30 {
		t.Errorf("124M at B=4 T=1024: %v", big)
	}
}

func TestDecoderBytes(t *testing.T) {
	cfg := Config{MaxSeqLen: 32, VocabSize: 50, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 2, Channels: 16}
	m, err := New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.NewDecoder(3, 20)
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, s := range d.scratch {
		got += 4 * int64(s.Storage.Len())
	}
	got += 4 * int64(len(d.hostLogits))
	if want := cfg.DecoderBytes(3, 20); got != want {
		t.Errorf("decoder allocates %d bytes, DecoderBytes says %d", got, want)
	}
}

func mustPreset(t *testing.T, name string) Config {
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
