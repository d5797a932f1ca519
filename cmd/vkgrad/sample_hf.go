package main

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
)

// sampleHF generates from a Llama-family Hugging Face directory with its own tokenizer, the
// prompt as text or, with chat, as a user turn in the model's chat template.
func sampleHF(be tensor.Backend, dir, prompt, chat string, n, count int, opt sample.Options, seed uint64, log zerolog.Logger) error {
	m, err := llama.Load(be, dir)
	if err != nil {
		return err
	}
	tok, err := hftok.Load(dir)
	if err != nil {
		return err
	}
	text := prompt
	if chat != "" {
		tmpl, err := hftok.LoadTemplate(dir)
		if err != nil {
			return err
		}
		if text, err = tmpl.Render([]hftok.Message{{Role: "user", Content: chat}}, hftok.ChatOptions{AddGenerationPrompt: true}); err != nil {
			return fmt.Errorf("--chat: %w", err)
		}
	}
	ids := tok.Encode(text)
	if len(ids) == 0 {
		if len(m.Config.BOS) == 0 {
			return fmt.Errorf("give --prompt or --chat: %s has no BOS token to start from", dir)
		}
		ids = []int{m.Config.BOS[0]}
	}
	limit := len(ids) + n
	if m.Config.MaxPositions > 0 {
		limit = min(limit, m.Config.MaxPositions)
	}
	if len(ids) >= limit {
		return fmt.Errorf("the prompt is %d tokens; the model's context is %d", len(ids), limit)
	}
	d, err := m.NewDecoder(count, limit)
	if err != nil {
		return err
	}
	defer d.Close()
	row := make([]int32, len(ids))
	for i, id := range ids {
		row[i] = int32(id)
	}
	prompts := make([][]int32, count)
	for i := range prompts {
		prompts[i] = row
	}
	eos := int32(-1)
	if len(m.Config.EOS) > 0 {
		eos = int32(m.Config.EOS[0])
	}
	start := time.Now()
	res, err := sample.Generate(d, prompts, n, eos, opt, sample.NewRNG(seed))
	if err != nil {
		return err
	}
	total := 0
	for i, out := range res.Tokens {
		gen := make([]int, 0, len(out))
		for _, id := range out {
			if id == eos {
				break
			}
			gen = append(gen, int(id))
		}
		total += len(out)
		s, err := tok.Decode(gen)
		if err != nil {
			return err
		}
		if count > 1 {
			fmt.Fprintf(stdout, "--- sample %d ---\n", i+1)
		}
		if chat != "" {
			fmt.Fprintln(stdout, s)
		} else {
			fmt.Fprintln(stdout, prompt+s)
		}
	}
	log.Info().Int("tokens", total).Float64("tok_per_s", rounded(float64(total)/time.Since(start).Seconds())).Msg("sampled")
	return nil
}
