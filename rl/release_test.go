package rl

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// liveBackend is a CPU backend that tracks the bytes it has allocated and not freed, and the
// most it held at once.
type liveBackend struct {
	*cpu.Backend
	live, peak int64
}

func (b *liveBackend) Alloc(dtype tensor.DType, n int) (tensor.Storage, error) {
	s, err := b.Backend.Alloc(dtype, n)
	if err == nil {
		b.live += 4 * int64(n)
		b.peak = max(b.peak, b.live)
	}
	return s, err
}

func (b *liveBackend) Free(s tensor.Storage) {
	b.live -= 4 * int64(s.Len())
	b.Backend.Free(s)
}

// unreleased is a policy that hides its model's releases and reserves from the trainer, as a
// model without them would.
type unreleased struct{ nn.LM }

// Reference hides the reference's releases too, which would free the activations it shares.
func (u unreleased) Reference() (nn.LM, bool, error) {
	r, shared, err := u.LM.Reference()
	return unreleased{r}, shared, err
}

// A Llama GRPO step gives its activations and heads back before the rollout and lays them out
// again for the update, full fine-tuning (whose reference shares the policy's activations) and
// LoRA alike: the steps are those of a policy that keeps them, bit for bit; each rollout's peak
// is lower by what the model's release frees; and the footprint, counting the two phases in turn, is
// within 1% of the peak and not below it.
func TestLlamaGRPOReleasesActivations(t *testing.T) {
	for _, lora := range []bool{false, true} {
		build := func(hide bool) (*GRPOTrainer, *liveBackend) {
			be := &liveBackend{Backend: cpu.NewWithThreads(1)}
			p := toyLlama(t, be, 3)
			if lora {
				if err := p.Model.EnableLoRA(llama.LoRAConfig{Rank: 4, Alpha: 8}, 11); err != nil {
					t.Fatal(err)
				}
			}
			var policy nn.LM = p
			if hide {
				policy = unreleased{p}
			}
			cfg := DefaultGRPOTrainerConfig()
			cfg.Train = toyTrainConfig()
			cfg.Train.MicroBatch = 8
			cfg.GRPO.GroupSize, cfg.GRPO.Beta = 8, 0.02
			tr, err := NewGRPOTrainer(policy, toy, toyPrompts(true), countA(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return tr, be
		}
		tr, be := build(false)
		kept, kb := build(true)
		// Rows of a step and the longest prompt of toyPrompts.
		rows, prompt := tr.Config.Train.PromptsPerStep*tr.Config.GRPO.GroupSize, len("dd+e=")
		f, err := EstimateFootprint(tr.policy, tr.Config.Train, rows, prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		var freed int64
		for s := range 3 {
			be.peak, kb.peak = be.live, kb.live
			r, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			k, err := kept.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			if a, b := r.Metrics["loss"], k.Metrics["loss"]; math.Float64bits(a) != math.Float64bits(b) || r.Metrics["kl_mean"] != k.Metrics["kl_mean"] {
				t.Errorf("LoRA %v, step %d: loss %v, kept activations %v; kl %v, %v", lora, s+1, a, b, r.Metrics["kl_mean"], k.Metrics["kl_mean"])
			}
			if s > 0 && kb.peak-be.peak != freed {
				t.Errorf("LoRA %v, step %d: peak %d bytes, with the activations kept %d: want %d less", lora, s+1, be.peak, kb.peak, freed)
			}
			if be.peak > f.Total() || f.Total()-be.peak > f.Total()/100 {
				t.Errorf("LoRA %v, step %d: peak %d bytes, footprint %d (%v)", lora, s+1, be.peak, f.Total(), f)
			}
			// As the next steps' rollouts do first: both free the heads, one the activations too.
			held, kheld := be.live, kb.live
			tr.releaseActivations()
			kept.releaseActivations()
			freed = held - be.live - (kheld - kb.live)
		}
		if freed <= 0 {
			t.Errorf("LoRA %v: the release freed %d bytes", lora, freed)
		}
		a, err := tr.policy.Params().ToHost()
		if err != nil {
			t.Fatal(err)
		}
		b, err := kept.policy.Params().ToHost()
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("LoRA %v: parameter %d after 3 steps: %v, kept activations %v", lora, i, a[i], b[i])
			}
		}
	}
}
