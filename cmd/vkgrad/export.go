package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn/gpt2/hf"
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
	if format != "hf" && format != "llmc" {
		return fmt.Errorf("--format %q: want hf or llmc", format)
	}
	if err := checkExportOut(model, format, out); err != nil {
		return err
	}
	t, err := load.HFModelType(model)
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
		if err := m.Export(out, dtype); err != nil {
			return err
		}
		return writeTokenizer(model, out)
	}
	l, err := load.Read(model)
	if err != nil {
		return err
	}
	if l.Llama != nil {
		if format != "hf" {
			return fmt.Errorf("--format %s: a %s run can only be exported as hf", format, l.Llama.Architecture)
		}
		return exportLlamaRun(l, load.HFDirOfRun(model), out, dtype)
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
	default: // llmc
		if dtype == "bfloat16" {
			return llmc.WriteCheckpointBF16(out, l.Config, l.Params)
		}
		return llmc.WriteCheckpoint(out, l.Config, l.Params)
	}
}

// checkExportOut refuses an --out whose files export would write over and are not an earlier
// export's: the model's own directory or file, a run directory, a folder with some other
// config.json, a file that is not an llm.c checkpoint.
func checkExportOut(model, format, out string) error {
	st, err := os.Stat(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if format == "llmc" {
		return checkExportFile(model, out, st)
	}
	if !st.IsDir() {
		return fmt.Errorf("--out %s is a file: --format hf writes a directory", out)
	}
	modelDir := model
	if mst, err := os.Stat(model); err == nil && !mst.IsDir() {
		modelDir = filepath.Dir(model)
	}
	if same(out, modelDir) || same(out, load.HFDirOfRun(model)) {
		return fmt.Errorf("--out %s is the model's own directory: exporting there would write over its files; choose a new directory", out)
	}
	if found := rundir.Existing(out); slices.Contains(found, rundir.Checkpoint) || slices.Contains(found, rundir.Metrics) {
		return fmt.Errorf("--out %s holds a vkgrad run (%s): exporting there would write over its config.json; choose a new directory", out, strings.Join(found, ", "))
	}
	if t, err := load.HFModelType(out); exists(filepath.Join(out, "config.json")) && (err != nil || t == "") {
		return fmt.Errorf("--out %s holds a config.json that is not a Hugging Face model's: exporting there would write over it; choose a new directory", out)
	}
	return nil
}

// checkExportFile is checkExportOut for an llm.c file: only an earlier llm.c checkpoint, not
// the model being exported, is replaced.
func checkExportFile(model, out string, st os.FileInfo) error {
	if st.IsDir() {
		return fmt.Errorf("--out %s is a directory: --format llmc writes a file", out)
	}
	if same(out, model) {
		return fmt.Errorf("--out %s is the model itself: choose a new file", out)
	}
	f, err := os.Open(out)
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || binary.LittleEndian.Uint32(magic[:]) != llmc.CheckpointMagic {
		return fmt.Errorf("--out %s exists and is not an llm.c checkpoint: exporting would write over it; choose a new file", out)
	}
	return nil
}

// same reports whether paths a and b name the same existing file or directory.
func same(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// exportLlamaRun writes a Llama-family run's weights as a Hugging Face directory, with the
// tokenizer of the directory the run started from (GPT-2's for a preset's run), so the result
// samples and fine-tunes like the original.
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
	return writeTokenizer(hfDir, out)
}

// writeTokenizer gives the export in out its tokenizer: the tokenizer files of the Hugging Face
// directory hfDir, or GPT-2's as tokenizer.json when hfDir is "" (a preset's model over GPT-2's
// tokenizer), so the export samples and fine-tunes like the model it came from.
func writeTokenizer(hfDir, out string) error {
	if hfDir == "" {
		raw, err := hf.GPT2Tokenizer()
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(filepath.Join(out, "tokenizer.json"), raw, 0o666)
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
		if err := atomicfile.WriteFile(filepath.Join(out, name), b, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// exists reports whether path names anything, a dangling link included.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
