package llama

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func loadFixture(t *testing.T, be tensor.Backend, name string) (*Model, expected) {
	t.Helper()
	m, err := Load(be, "testdata/"+name)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := readExpected(t, "testdata/"+name)
	return m, e
}

func logitsOf(t *testing.T, m *Model, in []int32, B, T int) []float32 {
	t.Helper()
	if err := m.Forward(nil, in, B, T); err != nil {
		t.Fatal(err)
	}
	l, err := tensor.ToHost(m.Logits().Value)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLoRAStartsAsTheBaseModel(t *testing.T) {
	m, e := loadFixture(t, cpu.New(), "qwen2-tiny")
	in := flatten(e.InputIDs)
	base := logitsOf(t, m, in, e.B, e.T)
	if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8}, 1); err != nil {
		t.Fatal(err)
	}
	with := logitsOf(t, m, in, e.B, e.T)
	for i := range base {
		if math.Float32bits(base[i]) != math.Float32bits(with[i]) {
			t.Fatalf("logit %d: %v with zero adapters, %v without", i, with[i], base[i])
		}
	}
	if m.Grads != nil {
		t.Error("adapters alone should allocate no gradients for the base weights")
	}
	for _, bad := range []LoRAConfig{{Rank: 0, Alpha: 1}, {Rank: 2, Alpha: 0}, {Rank: 2, Alpha: 1, Targets: []string{"c_attn"}}, {Rank: 2, Alpha: 1, Dropout: 1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v should be refused", bad)
		}
	}
	if err := m.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 2}, 1); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("adapters twice: %v", err)
	}
}

// TestLoRAGradients checks the adapters' gradients against central differences of the loss.
func TestLoRAGradients(t *testing.T) {
	m, e := loadFixture(t, cpu.New(), "qwen3-tiny")
	if err := m.EnableLoRA(LoRAConfig{Rank: 3, Alpha: 6, Targets: []string{"q_proj", "v_proj", "down_proj"}}, 2); err != nil {
		t.Fatal(err)
	}
	params, grads := m.Trainable()
	p := cpu.Float32s(params.Parts()[0])
	r := rng.New(3)
	for i := range p { // B nonzero too, so A's gradient is not zero
		p[i] += float32(0.05 * r.Normal())
	}
	in, tg := flatten(e.InputIDs), flatten(e.Targets)
	tp := autograd.NewTape()
	m.ZeroTrainableGrads()
	if _, err := m.ForwardLoss(tp, in, tg, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	g := append([]float32(nil), cpu.Float32s(grads.Parts()[0])...)
	loss := func() float64 {
		l, err := m.ForwardLoss(nil, in, tg, e.B, e.T)
		if err != nil {
			t.Fatal(err)
		}
		return float64(l)
	}
	const eps = 1e-2
	checked := 0
	for k := range 40 {
		i := (k * 7919) % len(p)
		orig := p[i]
		p[i] = orig + eps
		up := loss()
		p[i] = orig - eps
		down := loss()
		p[i] = orig
		fd := (up - down) / (2 * eps)
		if d := math.Abs(fd - float64(g[i])); d > 2e-3+0.05*math.Abs(fd) {
			t.Errorf("adapter parameter %d: gradient %.6g, finite difference %.6g", i, g[i], fd)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

// trainLoRA takes steps AdamW steps on the adapters and returns the losses.
func trainLoRA(t *testing.T, m *Model, e expected, steps int) []float32 {
	t.Helper()
	params, grads := m.Trainable()
	opt, err := optim.NewAdamW(params, optim.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	in, tg := flatten(e.InputIDs), flatten(e.Targets)
	tp := autograd.NewTape()
	var losses []float32
	for range steps {
		m.ZeroTrainableGrads()
		l, err := m.ForwardLoss(tp, in, tg, e.B, e.T)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		opt.Update(params, grads, 1e-2)
	}
	return losses
}

func TestLoRATrainsMergesAndExports(t *testing.T) {
	for _, name := range []string{"llama3-tiny", "qwen2-tiny"} {
		m, e := loadFixture(t, cpu.New(), name)
		before, _ := m.Params.ToHost()
		if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 16, Dropout: 0.05}, 7); err != nil {
			t.Fatal(err)
		}
		losses := trainLoRA(t, m, e, 12)
		if !(losses[len(losses)-1] < losses[0]-0.5) {
			t.Errorf("%s: LoRA losses %v do not fall", name, losses)
		}
		after, _ := m.Params.ToHost()
		for i := range before {
			if math.Float32bits(before[i]) != math.Float32bits(after[i]) {
				t.Fatalf("%s: base parameter %d changed while only adapters train", name, i)
			}
		}
		in := flatten(e.InputIDs)
		withAdapters := logitsOf(t, m, in, e.B, e.T)
		m.SetAdapters(false)
		if d := maxAbsDiff(logitsOf(t, m, in, e.B, e.T), logitsOf(t, mustLoad(t, name), in, e.B, e.T)); d != 0 {
			t.Errorf("%s: with adapters off the model differs from its base by %g", name, d)
		}
		m.SetAdapters(true)
		if err := m.MergeLoRA(); err != nil {
			t.Fatal(err)
		}
		merged := logitsOf(t, m, in, e.B, e.T)
		if d := maxAbsDiff(merged, withAdapters); d > 1e-4 {
			t.Errorf("%s: merged model's logits differ from the adapted model's by %g", name, d)
		}
		dir := t.TempDir()
		if err := m.Export(dir, "float32"); err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(logitsOf(t, mustLoad(t, dir), in, e.B, e.T), merged); d != 0 {
			t.Errorf("%s: the exported merged model differs by %g", name, d)
		}
	}
}

func mustLoad(t *testing.T, nameOrDir string) *Model {
	t.Helper()
	dir := nameOrDir
	if !strings.Contains(dir, "/") {
		dir = "testdata/" + dir
	}
	m, err := Load(cpu.New(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoRAOnVulkanTrainsLikeTheCPU(t *testing.T) {
	vkb := testutil.Vulkan(t)
	var runs [2][]float32
	for i, be := range []tensor.Backend{cpu.New(), vkb} {
		m, e := loadFixture(t, be, "qwen3-tiny")
		if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Dropout: 0.1}, 3); err != nil {
			t.Fatal(err)
		}
		runs[i] = trainLoRA(t, m, e, 6)
	}
	for s := range runs[0] {
		if d := math.Abs(float64(runs[0][s] - runs[1][s])); d > 1e-4 {
			t.Errorf("step %d: cpu loss %.6f, vulkan %.6f", s+1, runs[0][s], runs[1][s])
		}
	}
}

// The decoder applies the adapters as the forward does: its logits at every position of a
// prompt fed one token at a time equal the full forward's, adapters on (trained, B nonzero) and
// off.
func TestDecoderWithLoRAMatchesForward(t *testing.T) {
	m, e := loadFixture(t, cpu.New(), "qwen2-tiny")
	if err := m.EnableLoRA(LoRAConfig{Rank: 3, Alpha: 6}, 2); err != nil {
		t.Fatal(err)
	}
	p := cpu.Float32s(func() *tensor.Tensor { params, _ := m.Trainable(); return params.Parts()[0] }())
	r := rng.New(5)
	for i := range p {
		p[i] += float32(0.1 * r.Normal())
	}
	T := e.T
	row := flatten(e.InputIDs)[:T]
	for _, on := range []bool{true, false} {
		m.SetAdapters(on)
		full := logitsOf(t, m, row, 1, T)
		d, err := m.NewDecoder(1, T)
		if err != nil {
			t.Fatal(err)
		}
		V := m.Config.Vocab
		for pos := range T {
			got, err := d.Step(row[pos:pos+1], 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := maxAbsDiff(got, full[pos*V:(pos+1)*V]); diff > 1e-4 {
				t.Fatalf("adapters on %v, position %d: decoder logits differ from the forward's by %g", on, pos, diff)
			}
		}
		d.Close()
	}
	m.SetAdapters(true)
}
