package train

import (
	"context"
	"errors"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// newLlamaTrainer trains the Qwen3 fixture model on a repeating token stream.
func newLlamaTrainer(t *testing.T, cfg Config, lora bool) *Trainer {
	t.Helper()
	m, err := llama.Load(cpu.New(), "../llama/testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if lora {
		if err := m.EnableLoRA(llama.LoRAConfig{Rank: 4, Alpha: 16}, 3); err != nil {
			t.Fatal(err)
		}
	}
	tokens := make([]int32, 6000)
	for i := range tokens {
		tokens[i] = int32((i*7 + i/13) % m.Config.Vocab)
	}
	tr, err := New(nn.Llama(m), cfg, tokens, "test stream")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A Llama-family model trains through the same loop: the loss falls, a run cancelled and
// resumed from its directory ends with the parameters of an uninterrupted one bit for bit,
// and with LoRA only the adapters move.
func TestLlamaTrainsAndResumes(t *testing.T) {
	cfg := testConfig()
	cfg.LR, cfg.MinLR = 3e-3, 3e-3
	straight := newLlamaTrainer(t, cfg, false)
	var losses []float64
	err := straight.Run(context.Background(), RunOptions{OnStep: func(_ int, m map[string]float64) error {
		losses = append(losses, m["loss"])
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !(losses[len(losses)-1] < losses[0]-0.5) {
		t.Errorf("losses %v do not fall", losses)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	first := newLlamaTrainer(t, cfg, false)
	err = first.Run(ctx, RunOptions{Dir: dir, OnStep: func(step int, _ map[string]float64) error {
		if step == 4 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	second := newLlamaTrainer(t, cfg, false)
	if err := second.Run(context.Background(), RunOptions{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := llamaOf(straight).Params.ToHost()
	b, _ := llamaOf(second).Params.ToHost()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("parameter %d: %v resumed, %v straight", i, b[i], a[i])
		}
	}

	lora := newLlamaTrainer(t, cfg, true)
	base, _ := llamaOf(lora).Params.ToHost()
	losses = losses[:0]
	if err := lora.Run(context.Background(), RunOptions{OnStep: func(_ int, m map[string]float64) error {
		losses = append(losses, m["loss"])
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	after, _ := llamaOf(lora).Params.ToHost()
	for i := range base {
		if base[i] != after[i] {
			t.Fatalf("LoRA training moved base weight %d", i)
		}
	}
	if !(losses[len(losses)-1] < losses[0]-0.2) {
		t.Errorf("LoRA losses %v do not fall", losses)
	}
}

// DecayMatricesOnly leaves biases and norm weights undecayed: after a step they equal a run
// without weight decay, and the matrices a run decaying everything, bit for bit.
func TestDecayMatricesOnly(t *testing.T) {
	step := func(wd float64, matricesOnly bool) ([]float32, []nn.TensorSpec) {
		cfg := testConfig()
		cfg.WeightDecay, cfg.DecayMatricesOnly, cfg.LR, cfg.Warmup = wd, matricesOnly, 1e-2, 0
		tr := newTrainer(t, cfg)
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
		p, _ := tr.Model.StateParams()
		return p, tr.Model.TrainableSpecs()
	}
	all, specs := step(0.5, false)
	none, _ := step(0, false)
	mixed, _ := step(0.5, true)
	off, vectors := 0, 0
	for _, s := range specs {
		want := all
		if s.Vector {
			want, vectors = none, vectors+1
		}
		for i := off; i < off+s.Numel; i++ {
			if mixed[i] != want[i] {
				t.Fatalf("%s[%d] (vector %v): %v, want %v", s.Name, i-off, s.Vector, mixed[i], want[i])
			}
		}
		off += s.Numel
	}
	if vectors != 10 {
		t.Fatalf("%d of GPT-2's tensors taken for biases and norm weights, want 10", vectors)
	}
}

// llamaOf is the Llama-family model a trainer trains.
func llamaOf(tr *Trainer) *llama.Model { return tr.Model.(*nn.LlamaLM).Model }
