package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/hf"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// One call saves a model's weights: they load back bit for bit, with no optimizer state, and
// a GPT-2's Hugging Face export is the one Export writes from its parameters.
func TestSaveWeightsOnly(t *testing.T) {
	dir := t.TempDir()
	cfg, err := gpt2.Preset("gpt2-micro")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.InitRandom(4); err != nil {
		t.Fatal(err)
	}
	want, _ := g.ParamsToHost()
	path := filepath.Join(dir, "gpt2.safetensors")
	if err := SaveGPT2(path, g); err != nil {
		t.Fatal(err)
	}
	st, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Config != cfg || !slices.Equal(st.Params, want) || st.AdamM != nil {
		t.Errorf("GPT-2 weights: config %v, %d params equal %v, moments %v", st.Config, len(st.Params), slices.Equal(st.Params, want), st.AdamM != nil)
	}
	a, b := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
	if err := hf.ExportGPT2(a, g); err != nil {
		t.Fatal(err)
	}
	if err := hf.Export(b, cfg, want); err != nil {
		t.Fatal(err)
	}
	if x, _ := os.ReadFile(a); len(x) == 0 || !bytes.Equal(x, mustRead(t, b)) {
		t.Error("ExportGPT2 differs from Export of the same parameters")
	}

	lc, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := llama.New(cpu.New(), lc)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(5); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(llama.LoRAConfig{Rank: 2, Alpha: 4}, 6); err != nil {
		t.Fatal(err)
	}
	base, _ := m.Params.ToHost()
	adapters, _ := m.Trainable()
	ad, _ := adapters.ToHost()
	path = filepath.Join(dir, "qwen.safetensors")
	if err := SaveLlama(path, m); err != nil {
		t.Fatal(err)
	}
	st, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Llama == nil || st.LoRA == nil || st.LoRA.Rank != 2 || !slices.Equal(st.Params, append(base, ad...)) {
		t.Errorf("Llama weights with adapters: %v %v, params equal %v", st.Llama != nil, st.LoRA, slices.Equal(st.Params, append(base, ad...)))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
