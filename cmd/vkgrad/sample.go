package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/logfmt"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
)

// sampleCommand is `vkgrad sample`.
func sampleCommand() command {
	return command{name: "sample", summary: "generate text from a model with a KV cache", setup: func(fs *pflag.FlagSet) func([]string) error {
		f := &sampleFlags{common: addCommonFlags(fs), opt: sample.Options{Temperature: 0.8, TopK: 40, TopP: 0.95}}
		f.addFlags(fs)
		return f.run
	}}
}

// sampleFlags are the flags of `vkgrad sample`.
type sampleFlags struct {
	common        *commonFlags
	model, prompt string
	chat          string
	n, count      int
	seed          uint64
	opt           sample.Options
	precision     string
}

// addFlags registers the flags with f's values as defaults.
func (f *sampleFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.model, "model", "", "model to sample from: vkgrad or llm.c checkpoint, Hugging Face model.safetensors, or run directory (required)")
	fs.StringVar(&f.prompt, "prompt", "", "text to continue (default: the start of a new document)")
	fs.StringVar(&f.chat, "chat", "", "a Hugging Face chat model directory: ask this as the user, in the model's chat template")
	fs.IntVarP(&f.n, "max-new-tokens", "n", 128, "tokens to generate per sample")
	fs.IntVar(&f.n, "tokens", 128, "tokens to generate per sample")
	fs.MarkDeprecated("tokens", "use --max-new-tokens (or -n)")
	fs.IntVar(&f.count, "count", 1, "number of samples, generated as one batch")
	fs.Float64Var(&f.opt.Temperature, "temperature", f.opt.Temperature, "sampling temperature (0: greedy)")
	fs.IntVar(&f.opt.TopK, "top-k", f.opt.TopK, "keep only the k most likely tokens (0: all)")
	fs.Float64Var(&f.opt.TopP, "top-p", f.opt.TopP, "keep the smallest set of tokens whose probability reaches p (1: all)")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.StringVar(&f.precision, "precision", "fp32", precision.Help)
}

// check refuses arguments and out-of-range flags.
func (f *sampleFlags) check(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("sample takes no arguments, got %q (use --prompt)", args)
	}
	if f.model == "" {
		return fmt.Errorf("sample needs --model")
	}
	if f.n < 1 || f.count < 1 {
		return fmt.Errorf("--tokens %d and --count %d must be at least 1", f.n, f.count)
	}
	if err := f.opt.Validate(); err != nil {
		return fmt.Errorf("sampling options: %w", err)
	}
	return nil
}

// run samples from a Llama-family Hugging Face directory, or from a GPT-2 model in any format.
func (f *sampleFlags) run(args []string) error {
	if err := f.check(args); err != nil {
		return err
	}
	log := f.common.logger()
	be, err := f.common.backend(log)
	if err != nil {
		return err
	}
	if _, err := precision.Set(be, f.precision); err != nil {
		return err
	}
	t, err := load.HFModelType(f.model)
	if err != nil {
		return err
	}
	if t != "" && t != "gpt2" {
		return sampleHF(be, f.model, f.prompt, f.chat, f.n, f.count, f.opt, f.seed, log)
	}
	if f.chat != "" && t == "gpt2" {
		return fmt.Errorf("--chat needs a chat model's Hugging Face directory; %s is a GPT-2's, which has no chat template (use --prompt)", f.model)
	}
	if f.chat != "" {
		return fmt.Errorf("--chat needs a chat model's Hugging Face directory (config.json, tokenizer.json, tokenizer_config.json); %s is not one (use --prompt)", f.model)
	}
	m, l, err := load.Model(f.model, be)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := generateText(m, l.Path, f.prompt, f.n, f.count, f.opt, f.seed)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if res.limited {
		log.Warn().Int("tokens", res.room).Msg("the model's context limits the sample length")
	}
	for i, text := range res.texts {
		if f.count > 1 {
			fmt.Fprintf(stdout, "--- sample %d ---\n", i+1)
		}
		fmt.Fprintln(stdout, text)
	}
	total := res.tokens
	log.Info().Int("tokens", total).Float64("tok_per_s", logfmt.Rounded(float64(total)/elapsed.Seconds())).Msg("sampled")
	return nil
}

// generated is the outcome of generateText.
type generated struct {
	texts   []string // prompt + continuation, one per row
	tokens  int      // new tokens over all rows
	limited bool     // the context was shorter than prompt + n
	room    int      // new tokens the context allows per row
}

// generateText continues prompt (or a new document when empty) count times as one batch with the
// KV-cache decoder. path names the model in errors.
func generateText(m *gpt2.Model, path, prompt string, n, count int, opt sample.Options, seed uint64) (*generated, error) {
	tok, err := tokenizer.GPT2()
	if err != nil {
		return nil, err
	}
	if m.Config.VocabSize < tok.VocabSize() {
		return nil, fmt.Errorf("%s: vocabulary of %d is smaller than GPT-2's %d; it cannot be sampled as text", path, m.Config.VocabSize, tok.VocabSize())
	}
	ids := []int32{tokenizer.EOT}
	if prompt != "" {
		ids = tok.Encode(prompt)
	}
	if len(ids) >= m.Config.MaxSeqLen {
		return nil, fmt.Errorf("--prompt is %d tokens; the model's context is %d", len(ids), m.Config.MaxSeqLen)
	}
	limit := min(len(ids)+n, m.Config.MaxSeqLen)
	if err := checkDecoderMemory(m, count, limit); err != nil {
		return nil, err
	}
	d, err := m.NewDecoder(count, limit)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	prompts := make([][]int32, count)
	for i := range prompts {
		prompts[i] = ids
	}
	res, err := sample.Generate(d, prompts, n, tokenizer.EOT, opt, rng.New(seed))
	if err != nil {
		return nil, err
	}
	out := &generated{limited: len(ids)+n > limit, room: limit - len(ids)}
	for _, toks := range res.Tokens {
		text, err := tok.Decode(toks)
		if err != nil {
			return nil, err
		}
		out.texts = append(out.texts, prompt+text)
		out.tokens += len(toks)
	}
	return out, nil
}

// checkDecoderMemory refuses a batch of samples that cannot fit, saying how many would.
func checkDecoderMemory(m *gpt2.Model, count, limit int) error {
	copies := m.DecoderCopyBytes()
	err := tensor.CheckFits(m.Backend, m.Config.DecoderBytes(count, limit)+copies, fmt.Sprintf("--count %d", count))
	if err == nil {
		return nil
	}
	fit := sort.Search(count, func(n int) bool {
		return tensor.CheckFits(m.Backend, m.Config.DecoderBytes(n+1, limit)+copies, "") != nil
	})
	return fmt.Errorf("%w: --count %d fits", err, fit)
}
