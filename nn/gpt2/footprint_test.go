package gpt2

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestFootprintIsWhatTheModelAllocates: the estimate's activations equal the floats a training
// forward actually lays out, and parameters the model's.
func TestFootprintIsWhatTheModelAllocates(t *testing.T) {
	cfg := Config{MaxSeqLen: 32, VocabSize: 50, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 2, Channels: 16}
	be := cpu.New()
	const B, T = 3, 20
	f, m := estimateAndModel(t, be, cfg, B, T)
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

// With GPT-2's vocabulary the training head runs in chunks of rows: the estimate is what the
// chunks take, and past the per-position buffers (losses, the hidden states' gradient) it
// grows with neither the positions nor, beyond wte's gradient, the vocabulary: no B*T*V term.
func TestChunkedFootprint(t *testing.T) {
	// A vocabulary so wide that a chunk of headBudget is 64 rows of the 80.
	defer func(b int) { lossHeadBudget = b }(lossHeadBudget)
	lossHeadBudget = headBudget
	cfg := Config{MaxSeqLen: 32, VocabSize: 1<<18 - 8, PaddedVocabSize: 1 << 18, NumLayers: 1, NumHeads: 2, Channels: 8}
	be := cpu.New()
	const B, T = 4, 20
	f, m := estimateAndModel(t, be, cfg, B, T)
	if !m.chunkedLoss(B * T) {
		t.Fatalf("B=%d T=%d with a vocabulary of %d: not chunked", B, T, cfg.PaddedVocabSize)
	}
	if _, err := m.ForwardLoss(autograd.NewTape(), make([]int32, B*T), make([]int32, B*T), B, T); err != nil {
		t.Fatal(err)
	}
	a, h := m.acts, m.loss
	if a.headValues != nil || a.headGrads != nil || h == nil {
		t.Fatalf("chunked loss: whole head %v/%v, chunks %v", a.headValues, a.headGrads, h)
	}
	chunks := h.logits.Storage.Len() + h.dlogits.Storage.Len() + h.losses.Storage.Len() + h.dhidden.Storage.Len() + h.dwte.Storage.Len()
	if got := 4 * int64(a.values.len()+a.grads.len()+3*B*T+chunks); f.Activations != got {
		t.Errorf("estimated activations %d bytes, allocated %d", f.Activations, got)
	}

	lossHeadBudget = 2048 * 50304
	g := mustPreset(t, "gpt2-124m")
	head := func(c Config, B, T int) int64 {
		f, err := EstimateFootprint(be, c, B, T, true)
		if err != nil {
			t.Fatal(err)
		}
		trunk, err := TrunkActivationBytes(be, c, B, T, true)
		if err != nil {
			t.Fatal(err)
		}
		return f.Activations - trunk
	}
	C, Vp := int64(g.Channels), int64(g.PaddedVocabSize)
	perPos := 4 * (1 + C) // a loss and a hidden state's gradient
	base := head(g, 4, 1024)
	for _, bt := range [][2]int{{8, 1024}, {16, 1024}, {32, 512}} {
		n := int64(bt[0]*bt[1] - 4*1024)
		if got := head(g, bt[0], bt[1]) - base; got != n*perPos {
			t.Errorf("124M head at B=%d T=%d: %d bytes more than at B=4 T=1024, want %d (%d a position)", bt[0], bt[1], got, n*perPos, perPos)
		}
	}
	if base != 4*(2*2048*Vp+4096*(1+C)+Vp*C) || base > 1<<30 {
		t.Errorf("124M head at B=4 T=1024: %d bytes", base)
	}
	wide := g
	wide.VocabSize, wide.PaddedVocabSize = 2*g.VocabSize, 2*g.PaddedVocabSize
	chunk := int64(wide.lossChunkRows(4096, 0))
	if got := head(wide, 4, 1024); got != 4*(2*chunk*2*Vp+4096*(1+C)+2*Vp*C) {
		t.Errorf("124M with twice the vocabulary: head %d bytes", got)
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
	if got, want := d.Bytes(), cfg.DecoderBytes(3, 20); got != want {
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

// estimateAndModel is the training footprint of cfg at B x T and a model of it with gradients,
// whose forward the caller runs to compare what it lays out with the estimate.
func estimateAndModel(t *testing.T, be tensor.Backend, cfg Config, B, T int) (Footprint, *Model) {
	t.Helper()
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
	return f, m
}

// With Recompute every layer but one gives up its ln1, ln2 (B*T*C each) and GELU output
// (B*T*4C): (L-1)*6C*B*T floats. The estimate says so, and it is what the model lays out.
func TestRecomputeFootprint(t *testing.T) {
	cfg := Config{MaxSeqLen: 32, VocabSize: 50, PaddedVocabSize: 64, NumLayers: 3, NumHeads: 2, Channels: 16}
	be := cpu.New()
	const B, T = 3, 20
	saved := int64(4 * (3 - 1) * (16 + 16 + 4*16) * B * T) // 23040 bytes
	for _, training := range []bool{true, false} {
		plain, err := EstimateFootprintWith(be, cfg, B, T, FootprintOptions{Training: training})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := EstimateFootprintWith(be, cfg, B, T, FootprintOptions{Training: training, Recompute: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := plain.Activations - rc.Activations; d != saved {
			t.Errorf("training %v: recompute saves %d bytes, want %d", training, d, saved)
		}
		if !rc.Recompute || rc.Params != plain.Params || rc.Optimizer != plain.Optimizer {
			t.Errorf("training %v: %+v with recompute, %+v without", training, rc, plain)
		}
	}
	f, err := EstimateFootprintWith(be, cfg, B, T, FootprintOptions{Training: true, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	_, m := estimateAndModel(t, be, cfg, B, T)
	m.Recompute = true
	if _, err := m.ForwardLoss(autograd.NewTape(), make([]int32, B*T), make([]int32, B*T), B, T); err != nil {
		t.Fatal(err)
	}
	a := m.acts
	if got := 4 * int64(a.values.len()+a.grads.len()+a.headValues.len()+a.headGrads.len()+3*B*T); got != f.Activations {
		t.Errorf("estimated activations %d bytes with recompute, allocated %d", f.Activations, got)
	}
	if b := LargestBatchWith(be, cfg, T, 1000, FootprintOptions{Training: true, Recompute: true}, f.Total()); b != B {
		t.Errorf("largest batch within the recompute footprint = %d, want %d", b, B)
	}
	// GPT-2 124M at B=8, T=1024: 11 layers' 6*768 floats a token, 1584 MiB.
	big, err := EstimateFootprintWith(be, mustPreset(t, "gpt2-124m"), 8, 1024, FootprintOptions{Training: true})
	if err != nil {
		t.Fatal(err)
	}
	bigRC, err := EstimateFootprintWith(be, mustPreset(t, "gpt2-124m"), 8, 1024, FootprintOptions{Training: true, Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := big.Activations - bigRC.Activations; d != 1584<<20 {
		t.Errorf("124M at B=8 T=1024: recompute saves %d bytes, want %d", d, 1584<<20)
	}
}
