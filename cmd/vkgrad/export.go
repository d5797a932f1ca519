package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/nn/hf"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/llmc"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// exportCommand is `vkgrad export`.
func exportCommand() command {
	return command{name: "export", summary: "write a model's weights in another format: a Hugging Face directory or an llm.c checkpoint", setup: func(fs *pflag.FlagSet) func([]string) error {
		model := fs.String("model", "", "model to export: a run directory, a checkpoint, an llm.c file, or a Hugging Face directory")
		format := fs.String("format", "hf", "hf (a Hugging Face directory: config.json and model.safetensors) or llmc (an llm.c checkpoint file; GPT-2 only)")
		out := fs.String("out", "", "where to write: a directory for hf, a file for llmc")
		dtype := fs.String("dtype", "float32", "stored precision: float32 or bfloat16")
		return func([]string) error {
			if *model == "" || *out == "" {
				return fmt.Errorf("%w: export needs --model and --out", errUsage)
			}
			if *dtype != "float32" && *dtype != "bfloat16" {
				return fmt.Errorf("--dtype %q: want float32 or bfloat16", *dtype)
			}
			if err := export(*model, *format, *out, *dtype); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (%s, %s)\n", *out, *format, *dtype)
			return nil
		}
	}}
}

// export converts one model; a Llama-family directory goes through nn/llama, anything else
// through nn/load as GPT-2.
func export(model, format, out, dtype string) error {
	t, err := hfModelType(model)
	if err != nil {
		return err
	}
	if t != "" && t != "gpt2" {
		if format != "hf" {
			return fmt.Errorf("--format %s: a %s model can only be exported as hf", format, t)
		}
		m, err := llama.Load(cpu.New(), model)
		if err != nil {
			return err
		}
		return m.Export(out, dtype)
	}
	l, err := load.Read(model)
	if err != nil {
		return err
	}
	if l.Llama != nil {
		if format != "hf" {
			return fmt.Errorf("--format %s: a %s run can only be exported as hf", format, l.Llama.Architecture)
		}
		return exportLlamaRun(l, hfDirOfRun(model), out, dtype)
	}
	switch format {
	case "hf":
		if dtype != "float32" {
			return errors.New("--dtype bfloat16: GPT-2 exports to Hugging Face in float32 only")
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := hf.Export(filepath.Join(out, "model.safetensors"), l.Config, l.Params); err != nil {
			return err
		}
		return hf.WriteConfig(filepath.Join(out, "config.json"), l.Config)
	case "llmc":
		if dtype == "bfloat16" {
			return llmc.WriteCheckpointBF16(out, l.Config, l.Params)
		}
		return llmc.WriteCheckpoint(out, l.Config, l.Params)
	}
	return fmt.Errorf("--format %q: want hf or llmc", format)
}

// exportLlamaRun writes a Llama-family run's weights as a Hugging Face directory, with the
// tokenizer files of the directory the run started from, so the result samples and fine-tunes
// like the original.
func exportLlamaRun(l *load.Loaded, hfDir, out, dtype string) error {
	be := cpu.New()
	m, err := llama.New(be, *l.Llama)
	if err != nil {
		return err
	}
	base := l.Params[:l.Llama.NumParams()]
	if err := m.Params.Upload(base); err != nil {
		return err
	}
	if lo := l.State.LoRA; lo != nil { // merged into the weights: the result is a plain model
		if err := m.EnableLoRA(*lo, 0); err != nil {
			return err
		}
		adapters, _ := m.Trainable()
		if err := adapters.Upload(l.Params[len(base):]); err != nil {
			return err
		}
		if err := m.MergeLoRA(); err != nil {
			return err
		}
	}
	if err := m.Export(out, dtype); err != nil {
		return err
	}
	if hfDir == "" {
		return nil
	}
	limits := map[string]int64{"tokenizer.json": modelfile.Tokenizer, "tokenizer_config.json": modelfile.TokenizerConfig, "special_tokens_map.json": modelfile.TokenizerConfig}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} {
		b, err := modelfile.Read(filepath.Join(hfDir, name), limits[name])
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
