package trainrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/hftok"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// Model is the model a train run trains: a GPT-2, or a Llama-family model with the tokenizer
// its corpus needs (its Hugging Face directory's, or GPT-2's for a preset's shape).
type Model struct {
	LM    nn.LM            // the model as nn/train drives it: nn.GPT2 or nn.Llama
	HFDir string           // the Llama-family model's Hugging Face directory, "" for GPT-2's tokenizer
	Tok   data.LoadOptions // the corpus tokenizer: GPT-2's when it names none
}

// GPT2 is the model when it is a GPT-2, else nil.
func (m Model) GPT2() *gpt2.Model {
	if g, ok := m.LM.(*nn.GPT2LM); ok {
		return g.Model
	}
	return nil
}

// Llama is the model when it is of the Llama family, else nil.
func (m Model) Llama() *llama.Model {
	if l, ok := m.LM.(*nn.LlamaLM); ok {
		return l.Model
	}
	return nil
}

// Describe is the model's shape for the log.
func (m Model) Describe() string {
	if l := m.Llama(); l != nil {
		c := l.Config
		return fmt.Sprintf("%s L=%d hidden=%d heads=%d/%d V=%d", c.Architecture, c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Vocab)
	}
	return m.GPT2().Config.String()
}

// NumParams is the number of the model's parameters.
func (m Model) NumParams() int {
	if l := m.Llama(); l != nil {
		return l.Config.NumParams()
	}
	return m.GPT2().Config.NumParams()
}

// CorpusTokenizer is how a Llama-family model of shape c reads a corpus: with hfDir's
// tokenizer, its BOS (else its EOS) between documents, named in the token cache by a hash of
// tokenizer.json; GPT-2's tokenizer (the zero options) when hfDir is "".
func CorpusTokenizer(c llama.Config, hfDir string) (data.LoadOptions, error) {
	if hfDir == "" {
		return data.LoadOptions{}, nil
	}
	tok, err := hftok.Load(hfDir)
	if err != nil {
		return data.LoadOptions{}, err
	}
	var sep int32
	switch {
	case len(c.BOS) > 0:
		sep = int32(c.BOS[0]) // a document starts after the model's BOS
	case len(c.EOS) > 0:
		sep = int32(c.EOS[0])
	default:
		return data.LoadOptions{}, fmt.Errorf("%s: no bos_token_id or eos_token_id to separate documents with", hfDir)
	}
	raw, err := modelfile.Read(filepath.Join(hfDir, "tokenizer.json"), modelfile.Tokenizer)
	if err != nil {
		return data.LoadOptions{}, err
	}
	sum := sha256.Sum256(raw)
	return data.LoadOptions{Tokenizer: rl.HFTokenizer{Tokenizer: tok}, Separator: sep, TokenizerID: "tokenizer.json " + hex.EncodeToString(sum[:8])}, nil
}

// ModelChoice is which model a run trains, as train's flags say, and the memory check every
// choice passes before its model takes the device.
type ModelChoice struct {
	// Init is --init: a Llama-family Hugging Face directory, or a checkpoint or run directory,
	// whose contents say the family.
	Init string
	// Preset is --preset, the shape of a new model, of the family that names it.
	Preset string
	// HFDir is the resumed run's Hugging Face directory, whose tokenizer it reads.
	HFDir  string
	Seed   uint64 // a new model's random initial values
	Memory Memory
	Log    zerolog.Logger
}

// Choose makes the run's model on be: of the resumed run's shape when resumed is set (the
// trainer's Restore brings its values with the optimizer state), else --init's, else a new one
// of --preset's shape. name is the run's name: --init's when it gives one, else Preset. With
// Memory.DryRun the error is ErrDryRun once the footprint is printed.
func (c ModelChoice) Choose(be tensor.Backend, resumed *load.Loaded) (m Model, name string, err error) {
	switch {
	case resumed != nil:
		m, err = c.resumed(be, resumed)
		return m, c.Preset, err
	case c.Init != "":
		return c.initial(be)
	}
	m, err = c.preset(be)
	return m, c.Preset, err
}

// resumed is a model of the resumed run's shape.
func (c ModelChoice) resumed(be tensor.Backend, resumed *load.Loaded) (Model, error) {
	if resumed.Llama != nil {
		m, err := load.Llama(be, resumed)
		if err != nil {
			return Model{}, err
		}
		return llamaModel(m, c.HFDir)
	}
	if err := c.Memory.CheckGPT2(be, resumed.Config, c.Log); err != nil {
		return Model{}, err
	}
	m, err := gpt2.New(be, resumed.Config)
	if err != nil {
		return Model{}, err
	}
	return Model{LM: nn.GPT2(m)}, nil
}

// initial reads --init; the run takes its name from it.
func (c ModelChoice) initial(be tensor.Backend) (Model, string, error) {
	hfDir, err := load.IsLlamaDir(c.Init)
	if err != nil {
		return Model{}, "", fmt.Errorf("--init: %w", err)
	}
	if hfDir {
		m, err := llama.Load(be, c.Init)
		if err != nil {
			return Model{}, "", fmt.Errorf("--init: %w", err)
		}
		c.Log.Info().Str("format", "Hugging Face directory").Str("path", c.Init).Msg("initial model")
		tm, err := c.llamaOf(be, m, c.Init)
		return tm, filepath.Base(c.Init), err
	}
	l, err := load.Read(c.Init)
	if err != nil {
		return Model{}, "", fmt.Errorf("--init: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(l.Path), filepath.Ext(l.Path))
	if l.Llama == nil {
		tm, err := c.initGPT2(be, l)
		return tm, name, err
	}
	m, err := load.Llama(be, l)
	if err != nil {
		return Model{}, "", fmt.Errorf("--init %s: %w", l.Path, err)
	}
	c.Log.Info().Str("format", string(l.Format)).Str("path", l.Path).Msg("initial model")
	tm, err := c.llamaOf(be, m, load.HFDirOfRun(c.Init))
	return tm, name, err
}

// initGPT2 is the GPT-2 of --init's checkpoint l.
func (c ModelChoice) initGPT2(be tensor.Backend, l *load.Loaded) (Model, error) {
	if err := c.Memory.CheckGPT2(be, l.Config, c.Log); err != nil {
		return Model{}, err
	}
	m, err := load.GPT2(be, l)
	if err != nil {
		return Model{}, fmt.Errorf("--init %s: %w", l.Path, err)
	}
	c.Log.Info().Str("format", string(l.Format)).Str("path", l.Path).Msg("initial model")
	return Model{LM: nn.GPT2(m)}, nil
}

// preset is a new random model of --preset's shape, of the family that names it.
func (c ModelChoice) preset(be tensor.Backend) (Model, error) {
	cfg, gpt2Err := gpt2.Preset(c.Preset)
	if gpt2Err == nil {
		return c.newGPT2(be, cfg)
	}
	lc, err := llama.Preset(c.Preset)
	if err != nil {
		return Model{}, fmt.Errorf("--preset: %w (or a Llama-family shape: %s)", gpt2Err, strings.Join(llama.PresetNames(), ", "))
	}
	if lc.Vocab > gpt2.GPT2Vocab { // a new model reads GPT-2 tokens: no rows past them
		c.Log.Info().Int("preset_vocab", lc.Vocab).Int("vocab", gpt2.GPT2Vocab).Msg("the new model's vocabulary and EOS are GPT-2's")
		lc.Vocab, lc.BOS, lc.EOS = gpt2.GPT2Vocab, nil, []int{gpt2.GPT2Vocab - 1}
	}
	m, err := llama.New(be, lc)
	if err != nil {
		return Model{}, err
	}
	if err := m.InitRandom(c.Seed); err != nil {
		return Model{}, err
	}
	return c.llamaOf(be, m, "")
}

// newGPT2 is a new random GPT-2 of shape cfg.
func (c ModelChoice) newGPT2(be tensor.Backend, cfg gpt2.Config) (Model, error) {
	if err := c.Memory.CheckGPT2(be, cfg, c.Log); err != nil {
		return Model{}, err
	}
	m, err := gpt2.New(be, cfg)
	if err != nil {
		return Model{}, err
	}
	return Model{LM: nn.GPT2(m)}, m.InitRandom(c.Seed)
}

// llamaOf pairs a Llama-family model with hfDir's tokenizer and checks that the run fits.
func (c ModelChoice) llamaOf(be tensor.Backend, m *llama.Model, hfDir string) (Model, error) {
	tm, err := llamaModel(m, hfDir)
	if err != nil {
		return tm, err
	}
	return tm, c.Memory.CheckLlama(be, m, c.Log)
}

// llamaModel pairs a Llama-family model with its tokenizer (hfDir's, or GPT-2's).
func llamaModel(m *llama.Model, hfDir string) (Model, error) {
	tok, err := CorpusTokenizer(m.Config, hfDir)
	return Model{LM: nn.Llama(m), HFDir: hfDir, Tok: tok}, err
}
