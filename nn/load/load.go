// Package load reads a checkpoint or weights file of a model, recognising its format by content.
//
// [Read] takes a file, or a run directory holding [RunCheckpoint] or model.safetensors
// ([Resolve]), and returns it [Loaded] with the [Format] it was read as:
//   - a vkgrad checkpoint (nn/checkpoint), holding a GPT-2 or a Llama-family model, with the
//     whole training state;
//   - an llm.c checkpoint (version 3 float32 or version 5 bfloat16), a GPT-2;
//   - a Hugging Face GPT-2 model.safetensors.
//
// [Model] also places the model on a backend, and takes GPT-2 models only; [GPT2] and [Llama]
// place a checkpoint's model of either family, and [LM] either as the trainers drive it.
// Hugging Face directories of Llama-family models are read by [llama.Load] instead:
// [HFModelType] and [IsLlamaDir] tell them apart from run directories and GPT-2's, and
// [HFDirOfRun] finds the one a run was started from.
package load

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/modelfile"
	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/gpt2/hf"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/llmc"
	"github.com/vkgrad/vkgrad/tensor"
)

// Format names what a file was read as.
type Format string

const (
	FormatVkgrad      Format = "vkgrad checkpoint"
	FormatLLMC        Format = "llm.c checkpoint"
	FormatHuggingFace Format = "Hugging Face safetensors"
)

// RunCheckpoint is the checkpoint file name inside a run directory.
const RunCheckpoint = rundir.Checkpoint

const llmcMagic = 20240326

// Loaded is a model's configuration and parameters read from disk.
type Loaded struct {
	Path   string
	Format Format
	Config gpt2.Config
	// Llama is set, and Config unused, when a vkgrad checkpoint holds a Llama-family model.
	Llama  *llama.Config
	Params []float32
	// State is the whole checkpoint for the vkgrad format (optimizer, step, RNG, ...), else nil.
	State *checkpoint.State
}

// Resolve turns a run directory into the checkpoint inside it; files are returned unchanged.
// What is not a regular file (a named pipe, a device) is refused: opening it could block, and
// it has no size to check a header against.
func Resolve(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return regular(path, st)
	}
	for _, name := range []string{RunCheckpoint, "model.safetensors"} {
		p := filepath.Join(path, name)
		if st, err := os.Stat(p); err == nil {
			return regular(p, st)
		}
	}
	return "", fmt.Errorf("%s: directory holds neither %s nor model.safetensors", path, RunCheckpoint)
}

// regular returns path when st, its description, is a regular file's.
func regular(path string, st os.FileInfo) (string, error) {
	if err := modelfile.Check(path, st, -1); err != nil {
		return "", err
	}
	return path, nil
}

// Read loads a model file of any supported format.
func Read(path string) (*Loaded, error) {
	p, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	magic, err := readMagic(p)
	if err != nil {
		return nil, err
	}
	if magic == llmcMagic {
		cfg, params, err := llmc.ReadCheckpoint(p)
		if err != nil {
			return nil, err
		}
		return &Loaded{Path: p, Format: FormatLLMC, Config: cfg, Params: params}, nil
	}
	if meta, err := checkpoint.Peek(p); err == nil {
		st, err := checkpoint.Load(p)
		if err != nil {
			return nil, err
		}
		return &Loaded{Path: p, Format: FormatVkgrad, Config: meta.Config, Llama: meta.Llama, Params: st.Params, State: st}, nil
	} else if isVkgrad(p) {
		return nil, err
	}
	cfg, params, err := hf.Import(p, hf.ImportOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s is neither a vkgrad nor an llm.c checkpoint, and as Hugging Face safetensors: %w", p, err)
	}
	return &Loaded{Path: p, Format: FormatHuggingFace, Config: cfg, Params: params}, nil
}

// Model reads path and places the model on b: a GPT-2 (a Llama-family checkpoint is refused).
func Model(path string, b tensor.Backend) (*gpt2.Model, *Loaded, error) {
	l, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	if l.Llama != nil {
		return nil, nil, fmt.Errorf("%s holds a %s model (a Llama-family run), not a GPT-2", l.Path, l.Llama.Architecture)
	}
	m, err := GPT2(b, l)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	return m, l, nil
}

// GPT2 places the GPT-2 of checkpoint l on b, holding its values.
func GPT2(b tensor.Backend, l *Loaded) (*gpt2.Model, error) {
	if l.Llama != nil {
		return nil, fmt.Errorf("%s holds a %s model, not a GPT-2", l.Path, l.Llama.Architecture)
	}
	m, err := gpt2.New(b, l.Config)
	if err != nil {
		return nil, err
	}
	return m, m.SetParams(l.Params)
}

// LM places the model of checkpoint l on b, a GPT-2 or a Llama-family model with its
// adapters, as the trainers drive it (nn.GPT2, nn.Llama).
func LM(b tensor.Backend, l *Loaded) (nn.LM, error) {
	if l.Llama != nil {
		m, err := Llama(b, l)
		if err != nil {
			return nil, err
		}
		return nn.Llama(m), nil
	}
	m, err := GPT2(b, l)
	if err != nil {
		return nil, err
	}
	return nn.GPT2(m), nil
}

func readMagic(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, fmt.Errorf("%s: too short to be a model file (%v)", path, err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// isVkgrad reports whether a safetensors file claims to be a vkgrad checkpoint, so its errors
// are reported as such rather than as a failed Hugging Face import.
func isVkgrad(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	return bytes.Contains(buf[:n], []byte(checkpoint.Format))
}
