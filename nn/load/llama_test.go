package load

import (
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func tinyLlamaConfig() llama.Config {
	return llama.Config{ModelType: "llama", Architecture: "LlamaForCausalLM", Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1,
		HeadDim: 8, Intermediate: 32, Vocab: 24, MaxPositions: 16, RMSNormEps: 1e-5, RopeTheta: 10000, EOS: []int{23}}
}

// TestLlamaRestoresShapeAdaptersAndValues: the model Llama makes of a checkpoint holds the
// checkpoint's values, its LoRA adapters' included.
func TestLlamaRestoresShapeAdaptersAndValues(t *testing.T) {
	cfg := tinyLlamaConfig()
	lora := llama.LoRAConfig{Rank: 2, Alpha: 4}
	for _, withLoRA := range []bool{false, true} {
		src, err := llama.New(cpu.New(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.InitRandom(7); err != nil {
			t.Fatal(err)
		}
		st := &checkpoint.State{}
		if withLoRA {
			if err := src.EnableLoRA(lora, 0); err != nil {
				t.Fatal(err)
			}
			st.LoRA = &lora
		}
		want, err := src.StateParams()
		if err != nil {
			t.Fatal(err)
		}
		m, err := Llama(cpu.New(), &Loaded{Path: "run/checkpoint.safetensors", Llama: &cfg, Params: want, State: st})
		if err != nil {
			t.Fatalf("LoRA %v: %v", withLoRA, err)
		}
		got, err := m.StateParams()
		if err != nil {
			t.Fatal(err)
		}
		if (len(got) > cfg.NumParams()) != withLoRA || !slices.Equal(got, want) {
			t.Errorf("LoRA %v: %d values back of %d, or different ones", withLoRA, len(got), len(want))
		}
	}
	_, err := Llama(cpu.New(), &Loaded{Path: "gpt2.bin"})
	if want := "gpt2.bin holds a GPT-2, not a Llama-family model"; err == nil || err.Error() != want {
		t.Errorf("a GPT-2: error %v, want %q", err, want)
	}
}
