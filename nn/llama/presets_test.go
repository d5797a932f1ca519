package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func TestPresets(t *testing.T) {
	names := PresetNames()
	if names[0] != "llama-tiny" && names[0] != "qwen3-tiny" {
		t.Errorf("presets should be listed smallest first, got %v", names)
	}
	for _, n := range names {
		c, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	// Qwen2.5-0.5B has 494M parameters (its published count, embeddings tied).
	c, _ := Preset("qwen2.5-0.5b")
	if n := c.NumParams(); n != 494032768 {
		t.Errorf("qwen2.5-0.5b has %d parameters, want 494032768", n)
	}
	if _, err := Preset("gpt-5"); err == nil {
		t.Error("an unknown preset should be an error")
	}
	// A random tiny model learns: a few AdamW steps on one batch lower its loss.
	c, _ = Preset("qwen3-tiny")
	m, err := New(cpu.New(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	in, tg := []int32{1, 2, 3, 4, 5, 6, 7, 8}, []int32{2, 3, 4, 5, 6, 7, 8, 9}
	tp := autograd.NewTape()
	first, _ := m.ForwardLoss(nil, in, tg, 1, 8)
	for range 10 {
		m.ZeroGrad()
		if _, err := m.ForwardLoss(tp, in, tg, 1, 8); err != nil {
			t.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		sgd(m, 0.5)
	}
	last, _ := m.ForwardLoss(nil, in, tg, 1, 8)
	if !(last < first-1) {
		t.Errorf("loss %v -> %v after 10 steps; want a clear drop", first, last)
	}
}

// sgd takes a plain gradient step, p -= lr * g.
func sgd(m *Model, lr float32) {
	g := m.Grads.Parts()
	for i, p := range m.Params.Parts() {
		m.Backend.Axpy(p, -lr, g[i])
	}
}
