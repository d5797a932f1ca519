package rl

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/train"
)

// scaledTrainer is what the loss-scaling tests drive: GRPO, PPO or SFT.
type scaledTrainer struct {
	step      func() (map[string]float64, []string, error)
	params    func() []float32 // the policy's and, for PPO, the value head's
	setScaler func(*train.LossScaler)
	policy    nn.LM
}

func scaledGRPO(t *testing.T) scaledTrainer {
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.Mu, cfg.Train.MicroBatch = 2, 12
	cfg.GRPO.GroupSize, cfg.GRPO.Beta = 4, 0.05
	src, _ := newPrompts(7, false)
	tr, err := NewGRPOTrainer(nn.GPT2(toyModel(t, 3)), toy, src, countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return scaledTrainer{
		step:      reportStep(tr),
		params:    func() []float32 { return hostParams(t, tr.policy) },
		setScaler: tr.SetLossScaler,
		policy:    tr.policy,
	}
}

func scaledPPO(t *testing.T) scaledTrainer {
	cfg := DefaultPPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.PromptsPerStep, cfg.Train.Mu = 6, 2
	cfg.ValueHead.Init, cfg.ValueHead.InitValue = "random", 0.05
	cfg.SamplesPerPrompt, cfg.MiniBatches = 2, 3
	src, _ := newPrompts(11, true)
	tr, err := NewPPOTrainer(nn.GPT2(toyModel(t, 4)), toy, src, countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return scaledTrainer{
		step: reportStep(tr),
		params: func() []float32 {
			v, err := tr.Value.ParamsToHost()
			if err != nil {
				t.Fatal(err)
			}
			return append(hostParams(t, tr.policy), v...)
		},
		setScaler: tr.SetLossScaler,
		policy:    tr.policy,
	}
}

func scaledSFT(t *testing.T) scaledTrainer {
	cfg := SFTConfig{Steps: 10, Batch: 4, Settings: optim.Settings{LR: 1e-2, MinLR: 1e-2, MaxGradNorm: 1}, EOS: toyEOS, MicroBatch: 2}
	src, _ := newPrompts(5, false)
	tr, err := NewSFTTrainer(nn.GPT2(toyModel(t, 5)), toy, src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return scaledTrainer{
		step: func() (map[string]float64, []string, error) {
			s, err := tr.TrainStep()
			if err != nil {
				return nil, nil, err
			}
			m := s.Metrics()
			if s.Skipped {
				return m, []string{s.Reason}, nil
			}
			return m, nil, nil
		},
		params:    func() []float32 { return hostParams(t, tr.Model) },
		setScaler: tr.SetLossScaler,
		policy:    tr.Model,
	}
}

// reportStep is a rollout trainer's step as a scaledTrainer takes it.
func reportStep(tr interface{ TrainStep() (*StepReport, error) }) func() (map[string]float64, []string, error) {
	return func() (map[string]float64, []string, error) {
		rep, err := tr.TrainStep()
		if err != nil {
			return nil, nil, err
		}
		return rep.Metrics, rep.Warnings, nil
	}
}

func hostParams(t *testing.T, p nn.LM) []float32 {
	t.Helper()
	v, err := paramsToHost(p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var scaledTrainers = map[string]func(*testing.T) scaledTrainer{"grpo": scaledGRPO, "ppo": scaledPPO, "sft": scaledSFT}

// A power-of-two loss scale that neither overflows nor underflows changes no bit: three steps
// of GRPO (micro-batches, two updates), PPO (value head, mini-batches) and SFT
// (micro-batches) end with the parameters and metrics of unscaled runs.
func TestLossScalingKeepsTheBits(t *testing.T) {
	for name, build := range scaledTrainers {
		t.Run(name, func(t *testing.T) {
			plain, scaled := build(t), build(t)
			scaler := &train.LossScaler{Scale: 1 << 12, GrowthInterval: 2}
			scaled.setScaler(scaler)
			for step := range 3 {
				mp, _, err := plain.step()
				if err != nil {
					t.Fatal(err)
				}
				ms, _, err := scaled.step()
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range mp {
					if strings.HasSuffix(k, "seconds") {
						continue
					}
					if w := ms[k]; math.Float64bits(v) != math.Float64bits(w) {
						t.Fatalf("step %d: %s = %v scaled, %v unscaled", step+1, k, w, v)
					}
				}
			}
			if a, b := plain.params(), scaled.params(); firstDiffBits(a, b) >= 0 {
				t.Fatalf("parameter %d differs: %v scaled, %v unscaled", firstDiffBits(a, b), b[firstDiffBits(a, b)], a[firstDiffBits(a, b)])
			}
			if scaler.Scale <= 1<<12 {
				t.Fatalf("the scale stayed %v after good steps with a growth interval of 2", scaler.Scale)
			}
		})
	}
}

// A gradient that overflows under loss scaling skips the update and halves the scale; the
// parameters are left as they were, and the step says so. The toy GPT-2's final layernorm
// weight is made 2^10 times larger and its token embeddings (the lm head) 2^10 times smaller:
// the logits and so the samples are as before, but the embeddings' gradient is 2^10 times
// larger and overflows float32 at a scale of 2^127.
func TestLossScaleOverflowSkipsTheUpdate(t *testing.T) {
	for name, build := range scaledTrainers {
		t.Run(name, func(t *testing.T) {
			tr := build(t)
			w := hostParams(t, tr.policy)
			const Vp, C = 20, 16 // toyModel's padded vocabulary and channels
			for i := range Vp * C {
				w[i] *= 0x1p-10
			}
			for i := len(w) - 2*C; i < len(w)-C; i++ {
				w[i] *= 0x1p10
			}
			if err := tr.policy.Params().Upload(w); err != nil {
				t.Fatal(err)
			}
			scaler := &train.LossScaler{Scale: 0x1p127}
			tr.setScaler(scaler)
			before := tr.params()
			m, warnings, err := tr.step()
			if err != nil {
				t.Fatal(err)
			}
			if scaler.Scale >= 0x1p127 || scaler.GoodSteps != 0 {
				t.Fatalf("after an overflow the scaler is %+v, want a halved scale", *scaler)
			}
			if len(warnings) == 0 || !strings.Contains(warnings[0], "at loss scale 2^127") {
				t.Fatalf("warnings %q: want the overflow at 2^127 named", warnings)
			}
			if after := tr.params(); firstDiffBits(before, after) >= 0 {
				t.Fatalf("an overflowing step changed parameter %d", firstDiffBits(before, after))
			}
			if name != "sft" && (m["updates_skipped_overflow"] == 0 || m["loss_scale"] != float64(scaler.Scale)) {
				t.Fatalf("metrics %v: want the skipped updates and the scale", m)
			}
		})
	}
}

// A checkpoint keeps the scaler's state, and a run is resumed with loss scaling only when it
// was trained with it.
func TestCheckpointKeepsTheLossScale(t *testing.T) {
	cfg := SFTConfig{Steps: 4, Batch: 2, Settings: optim.Settings{LR: 1e-3, MinLR: 1e-3}, EOS: toyEOS}
	build := func(s *train.LossScaler) *SFTTrainer {
		src, _ := newPrompts(5, false)
		tr, err := NewSFTTrainer(nn.GPT2(toyModel(t, 5)), toy, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr.SetLossScaler(s)
		return tr
	}
	tr := build(&train.LossScaler{Scale: 1 << 10, GoodSteps: 5, GrowthInterval: 7})
	if _, err := tr.TrainStep(); err != nil {
		t.Fatal(err)
	}
	st, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	resumed := train.NewLossScaler()
	if err := build(resumed).Restore(st, "ckpt"); err != nil {
		t.Fatal(err)
	}
	if want := (train.LossScaler{Scale: 1 << 10, GoodSteps: 6, GrowthInterval: 7}); *resumed != want {
		t.Fatalf("resumed scaler %+v, want %+v", *resumed, want)
	}
	for _, c := range []struct {
		from *checkpoint.State
		into *train.LossScaler
	}{{st, nil}, {plainCheckpoint(t, build), train.NewLossScaler()}} {
		if err := build(c.into).Restore(c.from, "ckpt"); err == nil || !strings.Contains(err.Error(), "same precision") {
			t.Fatalf("a resume across loss scaling: %v, want it refused", err)
		}
	}
}

func plainCheckpoint(t *testing.T, build func(*train.LossScaler) *SFTTrainer) *checkpoint.State {
	st, err := build(nil).Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func firstDiffBits(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
