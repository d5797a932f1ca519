package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// Recompute gives the bits of stored activations, for every architecture and with LoRA
// adapters (dropping their inputs), on the CPU and on Vulkan: the loss and gradients of a
// training pass and of a SelectedHead's backward, at two batch shapes.
func TestRecomputeKeepsTheBits(t *testing.T) {
	for _, dir := range []string{"qwen3-tiny", "qwen2-tiny", "llama3-tiny"} {
		for _, lo := range []*LoRAConfig{nil, {Rank: 4, Alpha: 8, Dropout: 0.1}} {
			var results [2][]float32
			for i, recompute := range []bool{false, true} {
				m := loadModel(t, cpu.New(), dir, lo)
				m.Recompute = recompute
				results[i] = passResults(t, m)
			}
			if k := firstDiff(results[0], results[1]); k >= 0 {
				t.Errorf("%s, LoRA %v: result %d is %v with recompute, %v without", dir, lo != nil, k, results[1][k], results[0][k])
			}
		}
	}
	// One model switching it on and off between passes lays its activations out again each time.
	want := passResults(t, loadModel(t, cpu.New(), "qwen3-tiny", nil))
	m := loadModel(t, cpu.New(), "qwen3-tiny", nil)
	for _, recompute := range []bool{true, false, true} {
		m.Recompute = recompute
		if k := firstDiff(passResults(t, m), want); k >= 0 {
			t.Errorf("switched to recompute %v: result %d differs", recompute, k)
		}
	}
	be := testutil.Vulkan(t)
	for _, lo := range []*LoRAConfig{nil, {Rank: 4, Alpha: 8, Dropout: 0.1}} {
		var results [2][]float32
		for i, recompute := range []bool{false, true} {
			m := loadModel(t, be, "qwen3-tiny", lo)
			m.Recompute = recompute
			results[i] = passResults(t, m)
		}
		if k := firstDiff(results[0], results[1]); k >= 0 {
			t.Errorf("Vulkan, LoRA %v: result %d is %v with recompute, %v without", lo != nil, k, results[1][k], results[0][k])
		}
	}
}

// Recompute saves every layer but one its input-norm and MLP-norm outputs (Hidden floats a
// row each) and its SwiGLU product (Intermediate): the estimate says so, and a reserve with it
// allocates what the estimate says.
func TestRecomputeFootprint(t *testing.T) {
	c, err := ReadConfig("testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	const B, T = 3, 9
	want := int64(c.Layers-1) * 4 * int64(B*T*(2*c.Hidden+c.Intermediate))
	for _, training := range []bool{true, false} {
		plain, err := EstimateFootprintWith(cpu.New(), c, B, T, FootprintOptions{Training: training})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := EstimateFootprintWith(cpu.New(), c, B, T, FootprintOptions{Training: training, Recompute: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := plain.Activations - rc.Activations; d != want || !rc.Recompute {
			t.Errorf("training %v: recompute saves %d bytes (%d -> %d), want %d", training, d, plain.Activations, rc.Activations, want)
		}
	}
	be := &countingBackend{Backend: cpu.New()}
	m := loadTrainable(t, be, nil)
	m.Recompute = true
	before := be.live
	if err := m.ReserveActivations(B, T, true); err != nil {
		t.Fatal(err)
	}
	f, err := EstimateFootprintWith(be, m.Config, B, T, FootprintOptions{Training: true, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	head := 2 * 4 * int64(m.headChunkRows(B*T)*m.Config.Vocab)
	if got := be.live - before; got != f.Activations-head {
		t.Errorf("reserving B=%d T=%d with recompute allocated %d bytes, the estimate's trunk %d", B, T, got, f.Activations-head)
	}
}
