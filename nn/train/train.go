// Package train trains a language model on a token stream: the loop behind `vkgrad train`.
//
// [New] builds a [Trainer] for a language model ([nn.LM]: a GPT-2 or a Llama-family model) from
// a [Config] and the tokens, which nn/data cuts into training and validation batches. Each
// [Trainer.TrainStep] runs the forward and backward over the step's micro-batches and an AdamW
// update with a cosine schedule and gradient clipping (nn/optim); a step whose loss or gradient
// is not finite is skipped or stops the run, as [Config] says. [Config.Precision] rounds the
// matrix products' operands to bfloat16 or binary16; binary16 trains with dynamic loss scaling
// ([LossScaler]).
//
// [Trainer.Run] drives the steps with periodic validation ([Trainer.Evaluate], [EvalLoss]) and
// checkpoints ([Trainer.Save], [Trainer.Restore]) that a resume continues bit for bit on the
// CPU. [Trainer.SetComm] makes the trainer one rank of a data-parallel job ([mpi.Comm]).
package train

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/internal/tokenloss"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// Config is everything that decides a run's numbers.
type Config struct {
	Batch int `json:"batch"`
	Seq   int `json:"seq"`
	Steps int `json:"steps"`
	// Settings are the learning rate, its schedule, weight decay and clipping (their JSON
	// names sit beside the others').
	optim.Settings
	Seed        uint64  `json:"seed"`
	NoShuffle   bool    `json:"no_shuffle"`
	ValFraction float64 `json:"val_fraction"`
	ValBatches  int     `json:"val_batches"` // batches per validation; 0 means all
	// OnNonFinite is what a step whose loss or gradient norm is NaN or infinite does: "skip"
	// leaves everything as it was and goes on with the next batch, up to MaxSkips such steps in
	// a row; "stop" fails at once. Either way the weights never see the bad gradient.
	OnNonFinite string `json:"on_nonfinite,omitempty"`
	MaxSkips    int    `json:"max_skips,omitempty"`
	// MicroBatches splits a step into this many micro-batches of Batch sequences each, their
	// gradients added in order (gradient accumulation; over MPI, spread over the ranks). 0 or
	// 1: one.
	MicroBatches int `json:"micro_batches,omitempty"`
	// DecayMatricesOnly exempts biases and norm weights from weight decay, as nanoGPT does
	// (llm.c, and the default, decay every parameter).
	DecayMatricesOnly bool `json:"decay_matrices_only,omitempty"`
	// Precision is the format of the matrix products' operands (tensor.ParsePrecision): fp32
	// ("" too), bf16 or fp16; fp16 trains with dynamic loss scaling (LossScaler).
	Precision string `json:"precision,omitempty"`
	// Recompute keeps fewer activations and recomputes them in the backward (nn.Recomputer).
	// The numbers are the same bit for bit, so a run may resume with or without it.
	Recompute bool `json:"recompute,omitempty"`
}

// DefaultConfig is a setting that trains a small model well on a few million tokens.
func DefaultConfig() Config {
	return Config{Batch: 8, Seq: 64, Steps: 600, Settings: optim.Settings{LR: 3e-3, MinLR: 3e-4, Warmup: 20, MaxGradNorm: 1},
		Seed: 1, ValFraction: 0.05, ValBatches: 16}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Batch < 1:
		return fmt.Errorf("batch %d must be at least 1", c.Batch)
	case c.Seq < 1:
		return fmt.Errorf("seq %d must be at least 1", c.Seq)
	case c.Steps < 1:
		return fmt.Errorf("steps %d must be at least 1", c.Steps)
	case c.ValBatches < 0:
		return fmt.Errorf("val-batches %d must be non-negative", c.ValBatches)
	case c.MicroBatches < 0:
		return fmt.Errorf("micro-batches %d must be non-negative", c.MicroBatches)
	case !(c.ValFraction >= 0 && c.ValFraction < 1):
		return fmt.Errorf("val-fraction %v must be in [0, 1)", c.ValFraction)
	case c.OnNonFinite != "" && c.OnNonFinite != "skip" && c.OnNonFinite != "stop":
		return fmt.Errorf("on-nonfinite %q: want skip or stop", c.OnNonFinite)
	case c.MaxSkips < 0:
		return fmt.Errorf("max-skips %d must be non-negative", c.MaxSkips)
	}
	if _, err := c.ProductPrecision(); err != nil {
		return err
	}
	return c.Settings.Validate(c.Steps)
}

// ProductPrecision is Precision parsed; "" is FP32.
func (c Config) ProductPrecision() (tensor.Precision, error) {
	if c.Precision == "" {
		return tensor.FP32, nil
	}
	p, err := tensor.ParsePrecision(c.Precision)
	if err != nil {
		return p, fmt.Errorf("precision: %w", err)
	}
	return p, nil
}

// StepStats describe one optimizer step: of language-model training here, and of supervised
// fine-tuning in rl (SFTTrainer), so both kinds of run report the same quantities alike.
type StepStats struct {
	Step int `json:"step"` // 1-based count of steps taken
	// Loss is the mean negative log-likelihood per token the loss counts.
	Loss     float32 `json:"loss"`
	LR       float32 `json:"lr"`
	GradNorm float32 `json:"grad_norm"`
	// Tokens is the number of tokens the loss counts: every position of the batch in
	// language-model training; the answers' tokens and EOS (with the prompts' when not answer
	// only) in supervised fine-tuning.
	Tokens  int     `json:"tokens"`
	Seconds float64 `json:"seconds"`
	// Skipped is set when the loss or gradient was not finite and the update was not applied
	// (parameters, optimizer state and step count are as before it); Reason says why.
	Skipped bool   `json:"skipped,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// CommBytes and CommSeconds are what the step's gradient reduction sent to other ranks and
	// the time it spent in MPI (0 in one process).
	CommBytes   int64   `json:"comm_bytes,omitempty"`
	CommSeconds float64 `json:"comm_seconds,omitempty"`
	// LossScale is the loss scale the step ran with (0 without loss scaling).
	LossScale float32 `json:"loss_scale,omitempty"`
}

// Metrics are the step's numbers under the names of a metrics.jsonl step line; the traffic's
// only when the step sent something.
func (s StepStats) Metrics() map[string]float64 {
	m := map[string]float64{"loss": float64(s.Loss), "learning_rate": float64(s.LR), "grad_norm": float64(s.GradNorm),
		"tokens": float64(s.Tokens), "step_seconds": s.Seconds}
	if s.CommBytes > 0 {
		m["comm_bytes"], m["comm_seconds"] = float64(s.CommBytes), s.CommSeconds
	}
	if s.LossScale > 0 {
		m["loss_scale"] = float64(s.LossScale)
	}
	return m
}

// Trainer owns a model, its optimizer and the data position.
type Trainer struct {
	Config Config
	// Model is the model being trained: nn.GPT2 or nn.Llama of the family's model.
	Model      nn.LM
	Opt        *optim.AdamW
	Train, Val *data.Loader
	Step       int // steps taken
	RNG        *rng.RNG

	tape     *autograd.Tape
	schedule optim.Cosine
	// stats gathers the per-token losses and the gradient sum of squares on the device so a
	// step reads them back in one transfer (one queue submission per step on a GPU).
	stats                *tensor.Tensor
	statLosses, statNorm *tensor.Tensor // views of stats, made once
	hostStats            []float32

	comm *mpi.Comm // nil: one process
	acc  *accum    // micro-batched steps

	// Skipped counts the steps whose loss or gradient was not finite and were not applied.
	Skipped     int
	skipsInARow int

	// Scaler scales the loss gradient (New makes one for fp16 products; nil: no scaling) of a
	// model that is an nn.LossScaler. Its scale must be a power of two.
	Scaler *LossScaler
}

// New builds a trainer for model m (nn.GPT2(gpt), nn.Llama(llama): every weight trains, or only
// a Llama-family model's LoRA adapters when it has them) over tokens (validated against the
// vocabulary by the loader). source names the data in errors.
func New(m nn.LM, cfg Config, tokens []int32, source string) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Seq > m.MaxSeqLen() {
		return nil, fmt.Errorf("seq %d exceeds the model's context of %d", cfg.Seq, m.MaxSeqLen())
	}
	train, val, err := data.NewLoaders(tokens, data.LoaderConfig{B: cfg.Batch, T: cfg.Seq, MaxT: m.MaxSeqLen(),
		VocabSize: m.VocabSize(), ValFraction: cfg.ValFraction, ValMode: data.ValInterleaved,
		Seed: cfg.Seed, NoShuffle: cfg.NoShuffle, Source: source})
	if err != nil {
		return nil, err
	}
	if err := m.EnableGrads(); err != nil {
		return nil, err
	}
	opt, err := optim.NewAdamW(m.Params(), cfg.AdamW())
	if err != nil {
		return nil, err
	}
	if cfg.DecayMatricesOnly {
		if err := opt.SetNoDecay(vectorSpans(m.TrainableSpecs())); err != nil {
			return nil, err
		}
	}
	scaler, err := setPrecision(m, cfg)
	if err != nil {
		return nil, err
	}
	if err := setRecompute(m, cfg.Recompute); err != nil {
		return nil, err
	}
	BT := cfg.Batch * cfg.Seq
	stats, err := tensor.New(m.Backend(), tensor.Float32, BT+1)
	if err != nil {
		return nil, err
	}
	return &Trainer{Config: cfg, Model: m, Opt: opt, Train: train, Val: val, RNG: rng.New(cfg.Seed),
		tape: autograd.NewTape(), schedule: cfg.Schedule(cfg.Steps), Scaler: scaler,
		stats: stats, statLosses: stats.View(0, BT), statNorm: stats.View(BT, 1), hostStats: make([]float32, BT+1)}, nil
}

// setPrecision sets the model's backend to compute its products in cfg's precision and
// returns the loss scaler fp16 needs (nil for the others).
func setPrecision(m nn.LM, cfg Config) (*LossScaler, error) {
	p, err := cfg.ProductPrecision()
	if err != nil {
		return nil, err
	}
	if err := tensor.SetProductPrecision(m.Backend(), p); err != nil {
		return nil, fmt.Errorf("precision %v: %w", p, err)
	}
	if p != tensor.FP16 {
		return nil, nil
	}
	if _, ok := m.(nn.LossScaler); !ok {
		return nil, fmt.Errorf("precision fp16: the model cannot scale its loss gradient")
	}
	return NewLossScaler(), nil
}

// setRecompute switches the model's recomputing (Config.Recompute) on or off.
func setRecompute(m nn.LM, on bool) error {
	r, ok := m.(nn.Recomputer)
	if ok {
		r.SetRecompute(on)
	} else if on {
		return fmt.Errorf("recompute: %T cannot recompute its activations", m)
	}
	return nil
}

// vectorSpans are the runs of the flat buffer that hold biases and norm weights.
func vectorSpans(specs []nn.TensorSpec) []optim.Span {
	var out []optim.Span
	off := 0
	for _, s := range specs {
		if s.Vector {
			out = append(out, optim.Span{Off: off, N: s.Numel})
		}
		off += s.Numel
	}
	return out
}

// TrainStep takes one optimizer step on the next training batch (of Config.MicroBatches
// micro-batches, over the ranks of SetComm).
func (t *Trainer) TrainStep() (StepStats, error) {
	if t.Config.microBatches() > 1 || t.comm != nil {
		return t.trainStepAccumulated()
	}
	start := time.Now()
	m := t.Model
	params, grads := m.Params(), m.Grads()
	BT := t.Config.Batch * t.Config.Seq
	x, y := t.Train.Next()
	scale, err := t.applyLossScale()
	if err != nil {
		return StepStats{}, err
	}
	if err := m.ForwardCrossEntropy(t.tape, x, y, t.Config.Batch, t.Config.Seq); err != nil {
		t.tape.Reset()
		return StepStats{}, err
	}
	if err := backwardFromZero(m, t.tape); err != nil {
		return StepStats{}, err
	}
	Unscale(grads, scale)
	lr := t.schedule.At(t.Step)
	be := m.Backend()
	// Loss and gradient norm come back in one transfer, before the update: a non-finite value
	// must never reach the weights.
	t.Opt.MeasureGrads(grads)
	be.Copy(t.statLosses, m.Losses())
	be.Copy(t.statNorm, t.Opt.GradSumSq())
	if err := be.Download(t.hostStats, t.stats); err != nil {
		return StepStats{}, err
	}
	loss := tokenloss.Mean(t.hostStats[:BT])
	norm := float32(math.Sqrt(float64(t.hostStats[BT])))
	stats := StepStats{Step: t.Step + 1, Loss: loss, LR: lr, GradNorm: norm, Tokens: BT}
	return t.finishStep(stats, scale, params, grads, lr, start)
}

// finishStep applies a measured step: a non-finite loss or gradient norm skips it (lowering the
// loss scale, or counting a non-finite step), else AdamW updates the parameters.
func (t *Trainer) finishStep(stats StepStats, scale float32, params, grads *tensor.Flat, lr float32, start time.Time) (StepStats, error) {
	if t.Scaler != nil {
		stats.LossScale = scale
	}
	if !finite(stats.Loss) || !finite(stats.GradNorm) {
		if t.lossScaleOverflow(&stats, start) {
			return stats, nil
		}
		return t.nonFinite(stats, start)
	}
	if t.Scaler != nil {
		t.Scaler.Update(true)
	}
	t.Opt.UpdateMeasured(params, grads, lr)
	t.Step++
	t.skipsInARow = 0
	stats.Seconds = time.Since(start).Seconds()
	return stats, nil
}

// Evaluate returns the mean loss over the validation batches (the first ValBatches, always the
// same ones), without recording a tape.
func (t *Trainer) Evaluate() (float32, error) {
	if t.Val == nil {
		return 0, fmt.Errorf("no validation split (val fraction is 0)")
	}
	return EvalLoss(t.Model, t.Val, t.Config.Batch, t.Config.Seq, t.Config.ValBatches)
}

// LossModel is a model whose mean cross-entropy EvalLoss measures: an nn.LM, or a GPT-2 or
// Llama-family model itself.
type LossModel interface {
	ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error)
}

// EvalLoss averages the loss of a model over the first n batches (B, T) of l (all when n is 0 or
// larger than an epoch), restoring l's position afterwards.
func EvalLoss(m LossModel, l *data.Loader, B, T, n int) (float32, error) {
	loss, _, err := EvalLossProgress(m, l, B, T, n, nil)
	return loss, err
}

// EvalLossProgress is EvalLoss calling progress (when set) after each batch with the batches
// done and the total, and returning how many batches it averaged.
func EvalLossProgress(m LossModel, l *data.Loader, B, T, n int, progress func(done, total int)) (float32, int, error) {
	saved := l.State()
	defer l.Restore(saved)
	l.Reset()
	if n <= 0 || n > l.BatchesPerEpoch() {
		n = l.BatchesPerEpoch()
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("validation split holds no full batch")
	}
	var sum float64
	for i := 0; i < n; i++ {
		x, y := l.Next()
		loss, err := m.ForwardLoss(nil, x, y, B, T)
		if err != nil {
			return 0, 0, err
		}
		sum += float64(loss)
		if progress != nil {
			progress(i+1, n)
		}
	}
	return float32(sum / float64(n)), n, nil
}

// Meta keys of the trainer's state inside a checkpoint.
const (
	metaTrainConfig = "train_config"
	metaLoader      = "train_loader"
)

// Save writes a checkpoint with the parameters, the optimizer moments, the step, the RNG and
// the data position; written atomically by nn/checkpoint.
func (t *Trainer) Save(path string) error {
	m := t.Model
	host, err := m.Params().ToHost()
	if err != nil {
		return err
	}
	if bad := firstNonFinite(m.TrainableSpecs(), host); bad != "" {
		return fmt.Errorf("not saving %s: parameter %s is not finite; the last checkpoint is kept", path, bad)
	}
	params, err := m.StateParams()
	if err != nil {
		return err
	}
	am, err := t.Opt.M.ToHost()
	if err != nil {
		return err
	}
	av, err := t.Opt.V.ToHost()
	if err != nil {
		return err
	}
	cfgJSON, _ := json.Marshal(t.Config)
	loaderJSON, _ := json.Marshal(t.Train.State())
	st := &checkpoint.State{Step: t.Step, Params: params, AdamM: am, AdamV: av,
		Optimizer: checkpoint.Optimizer{Name: "adamw", LR: t.Config.LR, Beta1: float64(t.Opt.Config.Beta1),
			Beta2: float64(t.Opt.Config.Beta2), Eps: float64(t.Opt.Config.Eps), WeightDecay: float64(t.Opt.Config.WeightDecay),
			Extra: t.optimizerExtra()},
		RNG:  t.RNG.State(),
		Meta: map[string]string{metaTrainConfig: string(cfgJSON), metaLoader: string(loaderJSON)}}
	m.DescribeIn(st)
	return checkpoint.Save(path, st)
}

// Restore loads a checkpoint written by Save into a trainer built with the same model config
// and data: parameters, moments, step, RNG and data position.
func (t *Trainer) Restore(st *checkpoint.State, path string) error {
	if err := t.Model.Matches(st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.AdamM == nil || st.AdamV == nil {
		return fmt.Errorf("%s: checkpoint has no optimizer state to resume from", path)
	}
	if err := t.Model.SetStateParams(st.Params); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := t.Opt.M.Upload(st.AdamM); err != nil {
		return err
	}
	if err := t.Opt.V.Upload(st.AdamV); err != nil {
		return err
	}
	t.Step = st.Step
	t.Opt.Step = st.Step
	if s, ok := st.Optimizer.Extra["adam_step"]; ok {
		t.Opt.Step = int(s)
	}
	if err := t.restoreLossScale(st.Optimizer.Extra); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(st.RNG) > 0 {
		if err := t.RNG.SetState(st.RNG); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if raw, ok := st.Meta[metaLoader]; ok {
		var ls data.LoaderState
		if err := json.Unmarshal([]byte(raw), &ls); err != nil {
			return fmt.Errorf("%s: data loader state: %w", path, err)
		}
		if err := t.Train.Restore(ls); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// SavedConfig returns the training config stored in a checkpoint by Save, if any.
func SavedConfig(st *checkpoint.State) (Config, bool, error) {
	raw, ok := st.Meta[metaTrainConfig]
	if !ok {
		return Config{}, false, nil
	}
	var c Config
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return Config{}, true, fmt.Errorf("train config in checkpoint: %w", err)
	}
	return c, true, nil
}

// zeroBackwarder is a model that can back-propagate into gradients it treats as zero without
// clearing them first (gpt2.Model.BackwardFromZero).
type zeroBackwarder interface {
	BackwardFromZero(tp *autograd.Tape) error
}

// backwardFromZero clears m's gradients and back-propagates into them, skipping the clearing
// pass where m can.
func backwardFromZero(m nn.LM, tp *autograd.Tape) error {
	if z, ok := m.(zeroBackwarder); ok {
		return z.BackwardFromZero(tp)
	}
	m.ZeroGrad()
	return m.Backward(tp)
}
