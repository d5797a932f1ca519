package bench

import (
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
)

// modelCost is the work and traffic of a model's tokens that RL and Sample measure against
// the machine's limits.
type modelCost struct {
	body        float64 // weights of the blocks' matrix products
	head        float64 // weights of the lm head (vocabulary x width)
	layers      int
	qWidth      int     // query heads x head width: attention's work per attended position
	kvWidth     int     // key (or value) width of a layer, per cached position
	weightBytes float64 // bytes a decoding step reads: every weight but the looked-up embedding
}

func gpt2Cost(c gpt2.Config) modelCost {
	C := c.Channels
	return modelCost{body: float64(12 * c.NumLayers * C * C), head: float64(c.PaddedVocabSize * C), layers: c.NumLayers,
		qWidth: C, kvWidth: C, weightBytes: 4 * float64(c.NumParams()-c.MaxSeqLen*C)}
}

func llamaCost(c llama.Config) modelCost {
	head := float64(c.Vocab * c.Hidden)
	body := float64(c.NumParams()) - head // the embedding is looked up
	bytes := 4 * float64(c.NumParams())
	if !c.TieEmbeddings {
		body -= head
		bytes -= 4 * head
	}
	return modelCost{body: body, head: head, layers: c.Layers, qWidth: c.Heads * c.HeadDim, kvWidth: c.KVHeads * c.HeadDim, weightBytes: bytes}
}

func costOfPolicy(p nn.LM) modelCost {
	switch m := p.(type) {
	case *nn.GPT2LM:
		return gpt2Cost(m.Model.Config)
	case *nn.LlamaLM:
		return llamaCost(m.Model.Config)
	}
	return modelCost{}
}

// tokenFLOPs is the forward work of one token attending ctx positions, without the lm head:
// two per weight, and four per query width per layer per attended position (scores and mix).
func (m modelCost) tokenFLOPs(ctx int) float64 {
	return 2*m.body + 4*float64(m.layers*m.qWidth*ctx)
}

// seqFLOPs is a causal forward pass over n rows of T positions with the lm head on sel of them.
func (m modelCost) seqFLOPs(n, T, sel int) float64 {
	return float64(n)*(float64(T)*2*m.body+4*float64(m.layers*m.qWidth)*float64(T)*float64(T+1)/2) + float64(sel)*2*m.head
}

// kvBytes is the key/value cache a token attending ctx positions reads.
func (m modelCost) kvBytes(ctx int) float64 { return 2 * 4 * float64(m.layers*m.kvWidth*ctx) }
