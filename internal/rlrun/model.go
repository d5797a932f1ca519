package rlrun

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
)

// LoRA adds LoRA adapters to a Llama-family model; saved in the run's config.json.
type LoRA struct {
	Rank    int      `json:"r,omitempty"`
	Alpha   float64  `json:"alpha,omitempty"`
	Targets []string `json:"targets,omitempty"`
	Seed    uint64   `json:"seed,omitempty"`
}

// Config is the adapters' settings (ok false without --lora-rank).
func (l LoRA) Config() (cfg llama.LoRAConfig, ok bool, err error) {
	if l.Rank < 0 {
		return cfg, false, fmt.Errorf("--lora-rank %d: want >= 0 (0: full fine-tuning)", l.Rank)
	}
	if l.Rank == 0 {
		return cfg, false, nil
	}
	cfg = llama.LoRAConfig{Rank: l.Rank, Alpha: l.Alpha, Targets: l.Targets}
	if cfg.Alpha == 0 {
		cfg.Alpha = 2 * float64(l.Rank)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("--lora-rank/--lora-alpha/--lora-targets: %w", err)
	}
	return cfg, true, nil
}

// DescribePolicy names a policy's shape for the log.
func DescribePolicy(p nn.LM) string {
	switch m := p.(type) {
	case *nn.GPT2LM:
		return m.Model.Config.String()
	case *nn.LlamaLM:
		c := m.Model.Config
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", c.Architecture, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
	}
	return fmt.Sprintf("%T", p)
}

// AddAdapters gives a freshly loaded policy the adapters l asks for (none without a rank). A
// model whose checkpoint already holds adapters keeps training them, and is refused new ones.
func (l LoRA) AddAdapters(p nn.LM) error {
	cfg, ok, err := l.Config()
	if err != nil || !ok {
		return err
	}
	lp, isLlama := p.(*nn.LlamaLM)
	if !isLlama {
		return fmt.Errorf("--lora-rank: LoRA adapters are for Llama-family models, not a GPT-2 (%s)", DescribePolicy(p))
	}
	if have, already := lp.Model.LoRA(); already {
		return fmt.Errorf("--lora-rank %d: the model already has adapters (rank %d); leave the LoRA flags out to keep training them", cfg.Rank, have.Rank)
	}
	return lp.Model.EnableLoRA(cfg, l.Seed)
}

// LimitVocab defines the policy over tok's ids when the model's vocabulary is padded past them
// (Qwen: 151936 rows, 151669 tokens), saying so on log: a padding id sampled could not be
// decoded, and training must score tokens under the distribution they were drawn from.
func LimitVocab(m nn.LM, tok Tokenizer, log zerolog.Logger) error {
	n := tok.VocabSize()
	if m.VocabSize() <= n {
		return nil
	}
	rows, err := rl.LimitVocab(m, n)
	if err != nil {
		return err
	}
	log.Info().Int("model_vocab", rows).Int("tokenizer_vocab", n).
		Msg("the model's vocabulary is padded past its tokenizer's: the policy covers the tokenizer's ids only; the other rows are never sampled and have probability 0 in training")
	return nil
}
