// Package verify checks vkgrad's GPT-2 against llm.c's reference outputs on any backend.
//
// [LLMC] reads an llm.c model and debug state ([Options]) and compares, in a [Report], the
// logits, the loss and every parameter gradient ([TensorDiff]) of the state's batch, then the
// losses of a few AdamW steps against llm.c's ([ReadLosses]). Each comparison is held to the
// tolerances a float32 implementation should meet ([LogitsTol], [LossTol], [GradTol],
// [StepLossTol]); [Report.OK] says whether all of them are met.
package verify

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llmc"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// Tolerances a float32 implementation should meet against llm.c.
const (
	LogitsTol    = 1e-4
	LossTol      = 1e-5
	GradTol      = 1e-4 // of max|diff| / max(1, max|ref|)
	StepLossTol  = 1e-4
	DefaultLR    = 1e-3
	DefaultSteps = 10
)

// Options name the files and the optimizer setting the reference losses were made with.
type Options struct {
	ModelPath, StatePath, LossesPath string // LossesPath may be empty: steps are then skipped
	LR, WeightDecay                  float32
}

// TensorDiff is the comparison of one parameter's gradient.
type TensorDiff struct {
	Name           string
	MaxAbsDiff     float64
	RefMaxAbs      float64
	NormalisedDiff float64 // MaxAbsDiff / max(1, RefMaxAbs)
}

// Report holds every comparison; Failures lists those past tolerance.
type Report struct {
	Config        gpt2.Config
	B, T          int
	LogitsMaxDiff float64
	Loss, RefLoss float32
	Grads         []TensorDiff
	StepLosses    []float32
	RefStepLosses []float32
	StepMaxDiff   float64
	Failures      []string
}

// OK reports whether every comparison is within tolerance.
func (r *Report) OK() bool { return len(r.Failures) == 0 }

// GradMaxNormalisedDiff is the largest normalised gradient difference over all tensors.
func (r *Report) GradMaxNormalisedDiff() (float64, string) {
	worst, name := 0.0, ""
	for _, g := range r.Grads {
		if g.NormalisedDiff >= worst {
			worst, name = g.NormalisedDiff, g.Name
		}
	}
	return worst, name
}

// ReadLosses reads one float per line (blank lines ignored).
func ReadLosses(path string) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []float32
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %q is not a number", path, line, s)
		}
		out = append(out, float32(v))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no losses", path)
	}
	return out, nil
}

// LLMC runs the comparison on backend b.
func LLMC(b tensor.Backend, opt Options) (*Report, error) {
	ref, err := readReference(opt)
	if err != nil {
		return nil, err
	}
	m, err := newModel(b, ref.cfg, ref.params)
	if err != nil {
		return nil, err
	}
	state := ref.state
	r := &Report{Config: ref.cfg, B: state.B, T: state.T, RefLoss: state.Loss, RefStepLosses: ref.losses}
	tape := autograd.NewTape()
	if err := r.compareForward(m, tape, state); err != nil {
		return nil, err
	}
	if err := r.compareGrads(m, tape, state); err != nil {
		return nil, err
	}
	if len(ref.losses) > 0 {
		if err := r.runSteps(m, tape, state, opt); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// reference is what llm.c wrote: the model, its debug state and optionally its step losses.
type reference struct {
	cfg    gpt2.Config
	params []float32
	state  *llmc.DebugState
	losses []float32
}

// readReference reads the files opt names and checks the batch fits the model.
func readReference(opt Options) (*reference, error) {
	cfg, params, err := llmc.ReadCheckpoint(opt.ModelPath)
	if err != nil {
		return nil, err
	}
	state, err := llmc.ReadDebugState(opt.StatePath, cfg)
	if err != nil {
		return nil, err
	}
	var losses []float32
	if opt.LossesPath != "" {
		if losses, err = ReadLosses(opt.LossesPath); err != nil {
			return nil, err
		}
	}
	if state.T > cfg.MaxSeqLen {
		return nil, fmt.Errorf("%s: T=%d exceeds the model's max_seq_len %d (%s)", opt.StatePath, state.T, cfg.MaxSeqLen, opt.ModelPath)
	}
	return &reference{cfg: cfg, params: params, state: state, losses: losses}, nil
}

// newModel builds the model on b with params and gradients.
func newModel(b tensor.Backend, cfg gpt2.Config, params []float32) (*gpt2.Model, error) {
	m, err := gpt2.New(b, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.SetParams(params); err != nil {
		return nil, err
	}
	if err := m.EnableGrads(); err != nil {
		return nil, err
	}
	return m, nil
}

// compareForward runs the forward pass on tape and compares the logits (unpadded) and the
// loss with llm.c's.
func (r *Report) compareForward(m *gpt2.Model, tape *autograd.Tape, state *llmc.DebugState) error {
	B, T, V, Vp := state.B, state.T, r.Config.VocabSize, r.Config.PaddedVocabSize
	loss, err := m.ForwardLoss(tape, state.X, state.Y, B, T)
	if err != nil {
		return err
	}
	logits, err := tensor.ToHost(m.Logits().Value)
	if err != nil {
		return err
	}
	for i := 0; i < B*T; i++ {
		for v := 0; v < V; v++ {
			d := math.Abs(float64(logits[i*Vp+v]) - float64(state.Logits[i*V+v]))
			r.LogitsMaxDiff = math.Max(r.LogitsMaxDiff, d)
		}
	}
	r.Loss = loss
	if r.LogitsMaxDiff > LogitsTol || math.IsNaN(r.LogitsMaxDiff) {
		r.Failures = append(r.Failures, fmt.Sprintf("logits max |diff| %.3g > %.0e", r.LogitsMaxDiff, LogitsTol))
	}
	if d := math.Abs(float64(loss - state.Loss)); !(d <= LossTol) {
		r.Failures = append(r.Failures, fmt.Sprintf("loss %.8f vs llm.c %.8f: |diff| %.3g > %.0e", loss, state.Loss, d, LossTol))
	}
	return nil
}

// compareGrads runs the backward pass of tape and compares each parameter's gradient with
// llm.c's.
func (r *Report) compareGrads(m *gpt2.Model, tape *autograd.Tape, state *llmc.DebugState) error {
	m.ZeroGrad()
	if err := m.Backward(tape); err != nil {
		return err
	}
	grads, err := m.GradsToHost()
	if err != nil {
		return err
	}
	off := 0
	for _, s := range r.Config.ParamSpecs() {
		n := s.Numel()
		td := compare(s.Name, grads[off:off+n], state.Grads[off:off+n])
		r.Grads = append(r.Grads, td)
		if !(td.NormalisedDiff <= GradTol) {
			r.Failures = append(r.Failures, fmt.Sprintf("gradient of %s: max |diff| %.3g (max |ref| %.3g) > %.0e", s.Name, td.MaxAbsDiff, td.RefMaxAbs, GradTol))
		}
		off += n
	}
	return nil
}

// runSteps repeats forward, backward and AdamW on the same batch, as llm.c's test does.
func (r *Report) runSteps(m *gpt2.Model, tape *autograd.Tape, state *llmc.DebugState, opt Options) error {
	lr := opt.LR
	if lr == 0 {
		lr = DefaultLR
	}
	cfg := optim.DefaultAdamW()
	cfg.WeightDecay = opt.WeightDecay
	o, err := optim.NewAdamW(m.Params, cfg)
	if err != nil {
		return err
	}
	for step := range r.RefStepLosses {
		loss, err := m.ForwardLoss(tape, state.X, state.Y, state.B, state.T)
		if err != nil {
			return err
		}
		m.ZeroGrad()
		if err := m.Backward(tape); err != nil {
			return err
		}
		o.Update(m.Params, m.Grads, lr)
		r.StepLosses = append(r.StepLosses, loss)
		d := math.Abs(float64(loss - r.RefStepLosses[step]))
		r.StepMaxDiff = math.Max(r.StepMaxDiff, d)
		if !(d <= StepLossTol) {
			r.Failures = append(r.Failures, fmt.Sprintf("step %d loss %.6f vs llm.c %.6f: |diff| %.3g > %.0e", step, loss, r.RefStepLosses[step], d, StepLossTol))
		}
	}
	return m.Backend.Sync()
}

func compare(name string, got, ref []float32) TensorDiff {
	td := TensorDiff{Name: name}
	for i := range got {
		td.MaxAbsDiff = math.Max(td.MaxAbsDiff, math.Abs(float64(got[i])-float64(ref[i])))
		if math.IsNaN(float64(got[i])) {
			td.MaxAbsDiff = math.NaN()
		}
		td.RefMaxAbs = math.Max(td.RefMaxAbs, math.Abs(float64(ref[i])))
	}
	td.NormalisedDiff = td.MaxAbsDiff / math.Max(1, td.RefMaxAbs)
	return td
}
