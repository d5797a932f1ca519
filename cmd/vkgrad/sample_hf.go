package main

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/logfmt"
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
	if n := tok.VocabSize(); n < m.Config.Vocab {
		// A padding id drawn would have no text: sample among the tokenizer's ids.
		if err := m.LimitVocab(n); err != nil {
			return err
		}
		log.Info().Int("model_vocab", m.Config.Vocab).Int("tokenizer_vocab", n).Msg("the model's vocabulary is padded past its tokenizer's: sampling among the tokenizer's ids")
	}
	text, err := hfPromptText(dir, prompt, chat)
	if err != nil {
		return err
	}
	ids, err := hfPromptIDs(m, tok, text, dir)
	if err != nil {
		return err
	}
	limit, err := decodeLimit(m, len(ids), n)
	if err != nil {
		return err
	}
	d, err := m.NewDecoder(count, limit)
	if err != nil {
		return err
	}
	defer d.Close()
	eos := int32(-1)
	if len(m.Config.EOS) > 0 {
		eos = int32(m.Config.EOS[0])
	}
	start := time.Now()
	res, err := sample.Generate(d, repeatRow(ids, count), n, eos, opt, sample.NewRNG(seed))
	if err != nil {
		return err
	}
	shown := prompt
	if chat != "" {
		shown = "" // the chat turn is not echoed
	}
	total, err := printHFSamples(tok, res.Tokens, eos, shown)
	if err != nil {
		return err
	}
	log.Info().Int("tokens", total).Float64("tok_per_s", logfmt.Rounded(float64(total)/time.Since(start).Seconds())).Msg("sampled")
	return nil
}

// hfPromptText is the text to continue: the prompt, or with chat, a user turn in the
// directory's chat template followed by the assistant's opening.
func hfPromptText(dir, prompt, chat string) (string, error) {
	if chat == "" {
		return prompt, nil
	}
	tmpl, err := hftok.LoadTemplate(dir)
	if err != nil {
		return "", err
	}
	text, err := tmpl.Render([]hftok.Message{{Role: "user", Content: chat}}, hftok.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		return "", fmt.Errorf("--chat: %w", err)
	}
	return text, nil
}

// hfPromptIDs tokenises text, starting from the model's BOS token when it is empty.
func hfPromptIDs(m *llama.Model, tok *hftok.Tokenizer, text, dir string) ([]int, error) {
	ids := tok.Encode(text)
	if len(ids) > 0 {
		return ids, nil
	}
	if len(m.Config.BOS) == 0 {
		return nil, fmt.Errorf("give --prompt or --chat: %s has no BOS token to start from", dir)
	}
	return []int{m.Config.BOS[0]}, nil
}

// decodeLimit is the context the decoder needs for a prompt of p tokens and up to n new ones,
// capped at the model's.
func decodeLimit(m *llama.Model, p, n int) (int, error) {
	limit := p + n
	if m.Config.MaxPositions > 0 {
		limit = min(limit, m.Config.MaxPositions)
	}
	if p >= limit {
		return 0, fmt.Errorf("the prompt is %d tokens; the model's context is %d", p, limit)
	}
	return limit, nil
}

// repeatRow returns count prompts, each the tokens ids.
func repeatRow(ids []int, count int) [][]int32 {
	row := make([]int32, len(ids))
	for i, id := range ids {
		row[i] = int32(id)
	}
	prompts := make([][]int32, count)
	for i := range prompts {
		prompts[i] = row
	}
	return prompts
}

// printHFSamples prints each row's tokens up to eos after prefix, numbered when there are
// several, and returns the number of tokens generated.
func printHFSamples(tok *hftok.Tokenizer, rows [][]int32, eos int32, prefix string) (int, error) {
	total := 0
	for i, out := range rows {
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
			return 0, err
		}
		if len(rows) > 1 {
			fmt.Fprintf(stdout, "--- sample %d ---\n", i+1)
		}
		fmt.Fprintln(stdout, prefix+s)
	}
	return total, nil
}
