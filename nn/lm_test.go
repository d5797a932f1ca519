package nn

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// tinyLlama is a one-layer Llama with a llama3 RoPE scaling, the config field behind a pointer.
func tinyLlama(t *testing.T) *LlamaLM {
	t.Helper()
	cfg := llama.Config{ModelType: "llama", Architecture: "LlamaForCausalLM", Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2,
		HeadDim: 8, Intermediate: 64, Vocab: 40, MaxPositions: 16, RMSNormEps: 1e-5, RopeTheta: 10000, EOS: []int{39},
		RopeScaling: &llama.RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8}}
	m, err := llama.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	return Llama(m)
}

func tinyGPT2(t *testing.T) *GPT2LM {
	t.Helper()
	m, err := gpt2.New(cpu.New(), gpt2.Config{MaxSeqLen: 16, VocabSize: 40, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(3); err != nil {
		t.Fatal(err)
	}
	return GPT2(m)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A checkpoint's Llama config matches by value, so one read back from disk (its RoPE scaling
// behind another pointer) resumes; a changed field is named.
func TestLlamaMatchesByValue(t *testing.T) {
	l := tinyLlama(t)
	st := &checkpoint.State{}
	l.DescribeIn(st)
	saved := *st.Llama
	scaling := *saved.RopeScaling
	saved.RopeScaling = &scaling
	st.Llama = &saved
	if err := l.Matches(st); err != nil {
		t.Fatalf("an equal config behind other pointers: %v", err)
	}
	scaling.Factor = 8
	want := "model field RopeScaling.Factor is 8 in the checkpoint but 32 here"
	if got := errText(l.Matches(st)); got != want {
		t.Errorf("changed RoPE factor: %q, want %q", got, want)
	}
	lora := &checkpoint.State{}
	l.DescribeIn(lora)
	lora.LoRA = &llama.LoRAConfig{Rank: 2, Alpha: 4}
	if got, want := errText(l.Matches(lora)), "checkpoint has LoRA adapters: true, the model: false"; got != want {
		t.Errorf("adapters: %q, want %q", got, want)
	}
}

// Each family refuses the other's checkpoint and names a changed GPT-2 field.
func TestMatchesRefusesOtherShapes(t *testing.T) {
	g, l := tinyGPT2(t), tinyLlama(t)
	gs, ls := &checkpoint.State{}, &checkpoint.State{}
	g.DescribeIn(gs)
	l.DescribeIn(ls)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"gpt2 of itself", g.Matches(gs), "<nil>"},
		{"gpt2 of a llama", g.Matches(ls), "checkpoint holds a LlamaForCausalLM model, the model is a GPT-2"},
		{"llama of a gpt2", l.Matches(gs), "checkpoint holds a GPT-2, the model is a LlamaForCausalLM model"},
	} {
		if got := errText(c.err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	gs.Config.NumLayers = 2
	if got, want := errText(g.Matches(gs)), "model field num_layers is 2 in the checkpoint but 1 here"; got != want {
		t.Errorf("changed layers: %q, want %q", got, want)
	}
}

// The specs cover the trained buffer exactly: every weight, or a LoRA model's adapters.
func TestTrainableSpecsCoverParams(t *testing.T) {
	l := tinyLlama(t)
	check := func(name string, m LM, wantVectors int) {
		t.Helper()
		n, vectors := 0, 0
		for _, s := range m.TrainableSpecs() {
			n += s.Numel
			if s.Vector {
				vectors++
			}
		}
		if n != m.NumParams() || n != m.Params().Len() || vectors != wantVectors {
			t.Errorf("%s: specs cover %d values (%d vectors), the buffer %d (NumParams %d), want %d vectors", name, n, vectors, m.Params().Len(), m.NumParams(), wantVectors)
		}
	}
	check("gpt2", tinyGPT2(t), 10)
	check("llama", l, 3) // the layer's two norms and the final one
	if err := l.Model.EnableLoRA(llama.LoRAConfig{Rank: 2, Alpha: 4}, 1); err != nil {
		t.Fatal(err)
	}
	check("llama lora", l, 0)
}

// MaxSeqLen is max_position_embeddings, capped by MaxLen, and unbounded without either.
func TestLlamaMaxSeqLen(t *testing.T) {
	l := tinyLlama(t)
	for _, c := range []struct{ positions, maxLen, want int }{{16, 0, 16}, {16, 8, 8}, {16, 32, 16}, {0, 0, unbounded}, {0, 8, 8}} {
		l.Model.Config.MaxPositions, l.MaxLen = c.positions, c.maxLen
		if got := l.MaxSeqLen(); got != c.want {
			t.Errorf("positions %d, cap %d: %d, want %d", c.positions, c.maxLen, got, c.want)
		}
	}
}

// A LoRA model's reference is its base: the loss of the model before it had adapters, bit for
// bit, however the adapters moved; it has no parameters and refuses to train.
func TestLoRAReferenceIsTheBase(t *testing.T) {
	l := tinyLlama(t)
	inputs, targets := []int32{1, 2, 3, 4, 5, 6}, []int32{2, 3, 4, 5, 6, 7}
	base, err := l.ForwardLoss(nil, inputs, targets, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Model.EnableLoRA(llama.LoRAConfig{Rank: 2, Alpha: 4}, 1); err != nil {
		t.Fatal(err)
	}
	adapters := make([]float32, l.NumParams())
	for i := range adapters {
		adapters[i] = float32(math.Sin(float64(i))) / 4
	}
	if err := l.Params().Upload(adapters); err != nil {
		t.Fatal(err)
	}
	tuned, err := l.ForwardLoss(nil, inputs, targets, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	ref, shared, err := l.Reference()
	if err != nil || !shared || ref.NumParams() != 0 {
		t.Fatalf("reference: shared %v, %d parameters, %v; want shared, none", shared, ref.NumParams(), err)
	}
	got, err := ref.ForwardLoss(nil, inputs, targets, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got != base || tuned == base {
		t.Errorf("reference loss %v, want the base's %v (the adapted model's %v must differ)", got, base, tuned)
	}
	if after, _ := l.ForwardLoss(nil, inputs, targets, 2, 3); after != tuned {
		t.Errorf("the reference left the adapters off: loss %v, want %v", after, tuned)
	}
	if err := ref.Backward(nil); err != errFrozen {
		t.Errorf("reference Backward: %v, want %v", err, errFrozen)
	}
}

// A copied reference has the model's parameters, bit for bit, in buffers of its own.
func TestCopiedReference(t *testing.T) {
	for _, m := range []LM{tinyGPT2(t), tinyLlama(t)} {
		ref, shared, err := m.Reference()
		if err != nil || shared {
			t.Fatalf("%T: shared %v, %v", m, shared, err)
		}
		want, _ := m.StateParams()
		got, _ := ref.StateParams()
		if len(got) != len(want) || ref.Params() == m.Params() {
			t.Fatalf("%T: %d values, want %d in another buffer", m, len(got), len(want))
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%T: value %d: %v, want %v", m, i, got[i], want[i])
			}
		}
	}
}
