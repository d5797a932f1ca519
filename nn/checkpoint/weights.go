package checkpoint

import (
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
)

// SaveGPT2 writes m's weights alone, without optimizer state: a checkpoint that every command
// (--init, --model) and load.Read accept.
func SaveGPT2(path string, m *gpt2.Model) error {
	p, err := m.ParamsToHost()
	if err != nil {
		return err
	}
	return Save(path, &State{Config: m.Config, Params: p})
}

// SaveLlama writes a Llama-family model's weights alone, its LoRA adapters after them when it
// has some (to merge them into a plain model, export it with llama.Model.Export).
func SaveLlama(path string, m *llama.Model) error {
	p, err := m.StateParams()
	if err != nil {
		return err
	}
	c := m.Config
	st := &State{Llama: &c, Params: p}
	if lc, ok := m.LoRA(); ok {
		st.LoRA = &lc
	}
	return Save(path, st)
}
