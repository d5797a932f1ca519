package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/nn/train"
)

func init() {
	register("eval", "report a model's loss and perplexity on held-out data", func(fs *pflag.FlagSet) func([]string) error {
		common := addCommonFlags(fs)
		var (
			model    string
			df       dataFlags
			B, T, nb int
		)
		fs.StringVar(&model, "model", "", "model to evaluate: checkpoint or run directory (required)")
		fs.StringVar(&df.Path, "data", "", "text or llm.c token file to evaluate on, all of it (default for a run: the run's validation split)")
		fs.StringSliceVar(&df.Ext, "ext", nil, "with a folder, read only files with these extensions")
		fs.Int64Var(&df.MaxBytes, "max-bytes", 0, "read at most this many bytes of text (0: all)")
		fs.IntVar(&B, "batch", 8, "sequences per batch")
		fs.IntVar(&T, "seq", 0, "tokens per sequence (default: the run's, else 64)")
		fs.IntVar(&nb, "batches", 0, "evaluate at most this many batches (0: all)")
		cacheDir := fs.String("cache-dir", "", "where tokenised corpora are cached (default: the user cache directory's vkgrad folder)")
		return func(args []string) error {
			if len(args) > 0 || model == "" {
				return fmt.Errorf("usage: vkgrad eval --model M [--data D]")
			}
			log := common.logger()
			be, err := common.backend(log)
			if err != nil {
				return err
			}
			m, l, err := load.Model(model, be)
			if err != nil {
				return err
			}
			cfg := train.Config{Batch: B, Seq: T, Seed: 1}
			valFraction := 0.0
			if df.Path == "" {
				// A run directory knows its data and split.
				raw, err := os.ReadFile(filepath.Join(filepath.Dir(l.Path), "config.json"))
				if err != nil {
					return fmt.Errorf("--data is required: %s is not inside a run directory with a config.json", l.Path)
				}
				var meta runMeta
				if err := json.Unmarshal(raw, &meta); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(filepath.Dir(l.Path), "config.json"), err)
				}
				df, valFraction, cfg.Seed = meta.Data, meta.Train.ValFraction, meta.Train.Seed
				if T == 0 {
					cfg.Seq = meta.Train.Seq
				}
			}
			if cfg.Seq == 0 {
				cfg.Seq = min(64, m.Config.MaxSeqLen)
			}
			dir, err := tokenCacheDir(*cacheDir)
			if err != nil {
				return err
			}
			tokens, source, err := loadCorpus(df, dir, log)
			if err != nil {
				return err
			}
			if df.Fingerprint != "" {
				now, err := dataFingerprint(source)
				if err != nil {
					return err
				}
				if now != df.Fingerprint {
					return fmt.Errorf("the run's data %s changed since it was trained (%s, now %s): its validation split would not be the same; pass --data to evaluate on other data", source, df.Fingerprint, now)
				}
			}
			lc := data.LoaderConfig{B: cfg.Batch, T: cfg.Seq, MaxT: m.Config.MaxSeqLen, VocabSize: m.Config.VocabSize,
				ValFraction: valFraction, ValMode: data.ValInterleaved, Seed: cfg.Seed, NoShuffle: true, Source: source}
			trainL, valL, err := data.NewLoaders(tokens, lc)
			if err != nil {
				return err
			}
			split, which := trainL, "all tokens"
			if valL != nil {
				split, which = valL, "validation split"
			}
			loss, err := train.EvalLoss(m, split, cfg.Batch, cfg.Seq, nb)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s on %s (%s): loss %.4f, perplexity %.2f\n", l.Path, source, which, loss, math.Exp(float64(loss)))
			return nil
		}
	})
}
