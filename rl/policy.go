package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn"
)

// validate says whether the trainers can drive p as it is set up. LoRA dropout is refused: it
// would make the training-time log-probs differ from those the tokens were sampled with, and
// its masks are not part of a checkpoint.
func validate(p nn.LM) error {
	if l, ok := p.(*nn.LlamaLM); ok {
		if lc, ok := l.Model.LoRA(); ok && lc.Dropout != 0 {
			return fmt.Errorf("lora dropout %v: the trainers need 0 (dropout makes the trained log-probs differ from the sampled ones)", lc.Dropout)
		}
	}
	return nil
}

// enableGrads allocates p's gradients. A GPT-2 also lays every forward's activations out with
// theirs: the trainers evaluate and then train at one shape, so they are allocated once (a
// Llama-family model keeps activations with gradients for its later forwards by itself).
func enableGrads(p nn.LM) error {
	if g, ok := p.(*nn.GPT2LM); ok {
		g.Model.ActsWithGrads = true
	}
	return p.EnableGrads()
}

// paramsToHost downloads a policy's trained parameters.
func paramsToHost(p nn.LM) ([]float32, error) { return p.Params().ToHost() }

// setParams uploads a flat buffer of trained parameters into a policy.
func setParams(p nn.LM, v []float32) error {
	if len(v) != p.NumParams() {
		return fmt.Errorf("%d parameter values for a model of %d", len(v), p.NumParams())
	}
	return p.Params().Upload(v)
}
