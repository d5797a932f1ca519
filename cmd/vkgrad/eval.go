package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/fingerprint"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/progress"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/trainrun"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// evalCommand is `vkgrad eval`.
func evalCommand() command {
	return command{name: "eval", summary: "report a model's loss and perplexity on held-out data", setup: func(fs *pflag.FlagSet) func([]string) error {
		f := &evalFlags{common: addCommonFlags(fs)}
		f.addFlags(fs)
		return f.run
	}}
}

// evalFlags are the flags of `vkgrad eval`.
type evalFlags struct {
	common    *commonFlags
	model     string
	df        trainrun.Data
	B, T, nb  int
	cacheDir  string
	precision string
}

// addFlags registers the flags.
func (f *evalFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.model, "model", "", "model to evaluate: checkpoint or run directory (required)")
	fs.StringVar(&f.df.Path, "data", "", "text or llm.c token file to evaluate on, all of it (default for a run: the run's validation split)")
	fs.StringSliceVar(&f.df.Ext, "ext", nil, "with a folder, read only files with these extensions")
	fs.Int64Var(&f.df.MaxBytes, "max-bytes", 0, "read at most this many bytes of text (0: all)")
	fs.IntVar(&f.B, "batch", 8, "sequences per batch")
	fs.IntVar(&f.T, "seq", 0, "tokens per sequence (default: the run's, else 64)")
	fs.IntVar(&f.nb, "batches", 0, "evaluate at most this many batches (0: all)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where tokenised corpora are cached (default: the user cache directory's vkgrad folder)")
	fs.StringVar(&f.precision, "precision", "fp32", precision.Help)
}

// evalData is the text eval measures and how it is split and batched.
type evalData struct {
	df          trainrun.Data
	valFraction float64
	cfg         train.Config // Batch, Seq and the split's Seed
}

// run evaluates the model and prints its loss and perplexity.
func (f *evalFlags) run(args []string) error {
	if len(args) > 0 || f.model == "" {
		return fmt.Errorf("usage: vkgrad eval --model M [--data D]")
	}
	log := f.common.logger()
	be, err := f.common.backend(log)
	if err != nil {
		return err
	}
	if _, err := precision.Set(be, f.precision); err != nil {
		return err
	}
	m, err := openEvalModel(f.model, be)
	if err != nil {
		return err
	}
	d, err := f.dataToEvaluate(m)
	if err != nil {
		return err
	}
	dir, err := trainrun.TokenCacheDir(f.cacheDir)
	if err != nil {
		return err
	}
	tokens, source, err := d.df.Load(dir, m.tok, log)
	if err != nil {
		return err
	}
	if err := checkFingerprint(d.df, source); err != nil {
		return err
	}
	split, which, err := evalSplit(m, d, tokens, source)
	if err != nil {
		return err
	}
	cfg := d.cfg
	loss, n, err := evalLossWithBar(m.model, split, cfg.Batch, cfg.Seq, f.nb)
	if err != nil {
		return err
	}
	if n < split.BatchesPerEpoch() {
		which = fmt.Sprintf("the first %d of %d batches of %s", n, split.BatchesPerEpoch(), which)
	}
	fmt.Fprintf(stdout, "%s on %s (%s: %d tokens in %d batches of %dx%d): loss %.4f, perplexity %.2f\n",
		m.path, source, which, n*cfg.Batch*cfg.Seq, n, cfg.Batch, cfg.Seq, loss, math.Exp(float64(loss)))
	return nil
}

// dataToEvaluate is the data --data names, or for a run without --data, the run's own data,
// validation split and sequence length.
func (f *evalFlags) dataToEvaluate(m *evalModel) (evalData, error) {
	d := evalData{df: f.df, cfg: train.Config{Batch: f.B, Seq: f.T, Seed: 1}}
	if f.df.Path == "" && m.loaded == nil {
		return d, fmt.Errorf("--data is required for a Hugging Face directory: the text to evaluate on")
	}
	if f.df.Path == "" {
		meta, err := readEvalRunMeta(m.loaded.Path)
		if err != nil {
			return d, err
		}
		d.df, d.valFraction, d.cfg.Seed = meta.Data, meta.Train.ValFraction, meta.Train.Seed
		if f.T == 0 {
			d.cfg.Seq = meta.Train.Seq
		}
	}
	if d.cfg.Seq == 0 {
		d.cfg.Seq = min(64, m.maxT)
	}
	return d, nil
}

// runMeta is a train run's config.json.
type runMeta = trainrun.Meta

// readEvalRunMeta reads the config.json of the run directory holding the checkpoint at path: a
// train run's, whose data and validation split eval measures by default. An sft, grpo or ppo
// run learned tasks, not a text corpus, so it has no split to default to.
func readEvalRunMeta(path string) (*runMeta, error) {
	cpath := filepath.Join(filepath.Dir(path), rundir.Config)
	raw, err := rundir.ReadConfig(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("--data is required: %s is not inside a run directory with a config.json", path)
	}
	var meta struct {
		runMeta
		Command string `json:"command"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", cpath, err)
	}
	if meta.Command != "" {
		return nil, fmt.Errorf("--data is required: %s is a %s run, trained on tasks rather than text, so it has no validation split of its own (%s)",
			filepath.Dir(path), meta.Command, cpath)
	}
	return &meta.runMeta, nil
}

// checkFingerprint refuses a run's data that changed since the run was trained, since its
// validation split would differ.
func checkFingerprint(df trainrun.Data, source string) error {
	if df.Fingerprint == "" {
		return nil
	}
	now, err := fingerprint.Data(source)
	if err != nil {
		return err
	}
	if now != df.Fingerprint {
		return fmt.Errorf("the run's data %s changed since it was trained (%s, now %s): its validation split would not be the same; pass --data to evaluate on other data", source, df.Fingerprint, now)
	}
	return nil
}

// evalSplit returns the loader eval reads, the validation split when there is one, and a
// description of it.
func evalSplit(m *evalModel, d evalData, tokens []int32, source string) (*data.Loader, string, error) {
	lc := data.LoaderConfig{B: d.cfg.Batch, T: d.cfg.Seq, MaxT: m.maxT, VocabSize: m.vocab,
		ValFraction: d.valFraction, ValMode: data.ValInterleaved, Seed: d.cfg.Seed, NoShuffle: true, Source: source}
	trainL, valL, err := data.NewLoaders(tokens, lc)
	if err != nil {
		return nil, "", err
	}
	if valL != nil {
		return valL, "the validation split", nil
	}
	return trainL, "the whole data", nil
}

// evalLossWithBar measures the mean loss over up to nb batches of split, showing progress.
func evalLossWithBar(model train.LossModel, split *data.Loader, B, T, nb int) (float32, int, error) {
	var bar *progress.Bar
	loss, n, err := train.EvalLossProgress(model, split, B, T, nb, func(done, total int) {
		if bar == nil {
			bar = progress.New(os.Stderr, total)
		}
		bar.Update(done, "evaluating")
	})
	if bar != nil {
		bar.Clear()
	}
	return loss, n, err
}

// evalModel is a model eval measures, of either family, with the tokenizer its text needs.
type evalModel struct {
	model       train.LossModel
	path        string
	maxT, vocab int
	tok         data.LoadOptions // GPT-2's when it names no tokenizer
	loaded      *load.Loaded     // a checkpoint's contents; nil for a Hugging Face directory
}

// openEvalModel reads a GPT-2 (any format), a Llama-family Hugging Face directory, or a
// Llama-family run's checkpoint (tokenised with the directory the run started from).
func openEvalModel(path string, be tensor.Backend) (*evalModel, error) {
	if ok, err := load.IsLlamaDir(path); err != nil {
		return nil, err
	} else if ok {
		m, err := llama.Load(be, path)
		if err != nil {
			return nil, err
		}
		return llamaEvalModel(m, path, path, nil)
	}
	l, err := load.Read(path)
	if err != nil {
		return nil, err
	}
	if l.Llama == nil {
		m, _, err := load.Model(path, be)
		if err != nil {
			return nil, err
		}
		return &evalModel{model: m, path: l.Path, maxT: m.Config.MaxSeqLen, vocab: m.Config.VocabSize, loaded: l}, nil
	}
	m, err := load.Llama(be, l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	return llamaEvalModel(m, l.Path, load.HFDirOfRun(path), l)
}

// llamaEvalModel pairs a Llama-family model with the tokenizer of hfDir (GPT-2's when "").
func llamaEvalModel(m *llama.Model, path, hfDir string, l *load.Loaded) (*evalModel, error) {
	tok, err := trainrun.CorpusTokenizer(m.Config, hfDir)
	if err != nil {
		return nil, err
	}
	return &evalModel{model: m, path: path, maxT: m.Config.MaxPositions, vocab: m.Config.Vocab, tok: tok, loaded: l}, nil
}
