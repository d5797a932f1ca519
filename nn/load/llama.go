package load

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
)

// Llama places the Llama-family model of a vkgrad checkpoint on b: a model of its shape, with
// its LoRA adapters when it was trained with them, holding its values.
func Llama(b tensor.Backend, l *Loaded) (*llama.Model, error) {
	if l.Llama == nil {
		return nil, fmt.Errorf("%s holds a GPT-2, not a Llama-family model", l.Path)
	}
	m, err := llama.New(b, *l.Llama)
	if err != nil {
		return nil, err
	}
	if l.State != nil && l.State.LoRA != nil {
		if err := m.EnableLoRA(*l.State.LoRA, 0); err != nil {
			return nil, err
		}
	}
	return m, m.SetStateParams(l.Params)
}
