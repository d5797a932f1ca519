package rl

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// toyLlama is a one-layer Qwen3-shaped model (grouped-query attention, q/k norms, tied
// embeddings) over the toy alphabet.
func toyLlama(t testing.TB, be tensor.Backend, seed uint64) *nn.LlamaLM {
	t.Helper()
	cfg := llama.Config{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", Hidden: 32, Layers: 1, Heads: 4, KVHeads: 2,
		HeadDim: 8, Intermediate: 64, Vocab: toyEOS + 1, MaxPositions: 16, RMSNormEps: 1e-6, RopeTheta: 10000,
		QKNorm: true, TieEmbeddings: true, EOS: []int{toyEOS}}
	m, err := llama.New(be, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(seed); err != nil {
		t.Fatal(err)
	}
	return nn.Llama(m)
}

func toyLlamaGRPO(t testing.TB, be tensor.Backend, seed uint64, src PromptSource) *GRPOTrainer {
	t.Helper()
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.LR, cfg.Train.MinLR = 3e-3, 3e-3
	cfg.GRPO.GroupSize, cfg.GRPO.Beta = 8, 0.02
	tr, err := NewGRPOTrainer(toyLlama(t, be, seed), toy, src, countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// GRPO drives a Llama-family policy as it does GPT-2: the reward rises on the easy task.
func TestGRPOOnLlamaRaisesReward(t *testing.T) {
	tr := toyLlamaGRPO(t, cpu.NewWithThreads(1), 3, toyPrompts(true))
	requireRewardRise(t, tr, 40, func(s int, rep *StepReport) {
		if rep.Metrics["token_alignment"] != 1 || rep.Metrics["recompute_mismatch"] != 0 {
			t.Fatalf("step %d: token alignment %v, recompute mismatches %v", s+1, rep.Metrics["token_alignment"], rep.Metrics["recompute_mismatch"])
		}
	})
}

// requireRewardRise takes steps steps (check sees each report) and requires the mean reward of
// the last five to exceed the first five's by 0.3.
func requireRewardRise(t *testing.T, tr interface{ TrainStep() (*StepReport, error) }, steps int, check func(s int, rep *StepReport)) {
	t.Helper()
	var first, last float64
	for s := range steps {
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(s, rep)
		}
		if s < 5 {
			first += rep.Metrics["reward_mean"] / 5
		}
		if s >= steps-5 {
			last += rep.Metrics["reward_mean"] / 5
		}
	}
	t.Logf("reward %.3f -> %.3f", first, last)
	if last < first+0.3 {
		t.Fatalf("mean reward of the last 5 steps %.3f, first 5 %.3f: want a rise of 0.3", last, first)
	}
}

// A Llama-family GRPO run (with a KL reference) resumes bit for bit from a version 2
// checkpoint, and a GPT-2 trainer refuses that checkpoint.
func TestGRPOOnLlamaResumesBitForBit(t *testing.T) {
	build := func(seed uint64) resumer {
		src, _ := newPrompts(7, false)
		return toyLlamaGRPO(t, cpu.NewWithThreads(1), seed, src)
	}
	straight := checkContinuity(t, 4, build, func(tr resumer, st *checkpoint.State, path string) error {
		return tr.(*GRPOTrainer).Restore(st, path)
	})
	if straight[3].Metrics["kl_mean"] == 0 {
		t.Fatalf("the test does not exercise the reference: %v", straight[3].Metrics)
	}
	if n := straight[3].Metrics["num_tokens"]; !(n > straight[2].Metrics["num_tokens"] && straight[0].Metrics["num_tokens"] > 0) {
		t.Fatalf("num_tokens %v after 4 steps, %v after 3: want a growing count", n, straight[2].Metrics["num_tokens"])
	}
	st, err := build(3).(*GRPOTrainer).Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if st.Llama == nil {
		t.Fatal("a Llama run's checkpoint holds no Llama config")
	}
	g := toyGRPO(t, nil)
	if err := g.Restore(st, "c.safetensors"); err == nil {
		t.Fatal("a GPT-2 trainer restored a Llama checkpoint")
	}
}

// SFT on a Llama-family policy lowers the loss, on the CPU and on Vulkan alike.
func TestSFTOnLlamaCPUAndVulkanAgree(t *testing.T) {
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.LR, cfg.MinLR, cfg.EOS = 20, 4, 1e-2, 1e-2, toyEOS
	run := func(be tensor.Backend) []float64 {
		tr, err := NewSFTTrainer(toyLlama(t, be, 5), toy, toyPrompts(false), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var losses []float64
		for range cfg.Steps {
			s, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, float64(s.Loss))
		}
		return losses
	}
	c := run(cpu.NewWithThreads(1))
	if c[len(c)-1] > c[0]/2 {
		t.Fatalf("SFT loss %.3f -> %.3f: want it halved", c[0], c[len(c)-1])
	}
	v := run(testutil.Vulkan(t))
	for i := range c {
		if d := c[i] - v[i]; d > 1e-3 || d < -1e-3 {
			t.Fatalf("step %d: cpu loss %.6f, vulkan %.6f", i+1, c[i], v[i])
		}
	}
}

// PPO's value head reads a Llama-family policy's hidden states: the reward rises.
func TestPPOOnLlamaRaisesReward(t *testing.T) {
	cfg := DefaultPPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.LR, cfg.Train.MinLR, cfg.Train.PromptsPerStep, cfg.Train.Mu = 3e-3, 3e-3, 16, 2
	cfg.CriticWarmup, cfg.ValueLR = 3, 3e-2
	tr, err := NewPPOTrainer(toyLlama(t, cpu.NewWithThreads(1), 3), toy, toyPrompts(true), countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	requireRewardRise(t, tr, 40, func(s int, rep *StepReport) {
		if s == 2 && (rep.Metrics["critic_warmup"] != 1 || rep.Metrics["vf_loss"] == 0) {
			t.Fatalf("warm-up step: %v", rep.Metrics)
		}
	})
}

func toyLoRAGRPO(t testing.TB, seed uint64, src PromptSource) *GRPOTrainer {
	t.Helper()
	p := toyLlama(t, cpu.NewWithThreads(1), seed)
	// Embeddings five times larger (std 0.1), nearer a trained model's: with N(0, 0.02) ones and
	// the final norm frozen, the tied head's logits could hardly move, whatever the adapters do.
	w := cpu.Float32s(p.Model.Params.Parts()[0])
	for i := range p.Model.Config.Vocab * p.Model.Config.Hidden {
		w[i] *= 5
	}
	if err := p.Model.EnableLoRA(llama.LoRAConfig{Rank: 8, Alpha: 32}, 11); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	cfg.Train.LR, cfg.Train.MinLR = 1e-2, 1e-2
	cfg.GRPO.GroupSize, cfg.GRPO.Beta = 8, 0.02
	tr, err := NewGRPOTrainer(p, toy, src, countA(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// GRPO on LoRA adapters: the reference is the frozen base with the adapters off (KL exactly 0
// before the first update, positive after), the base weights never move, the reward rises,
// and a run resumes bit for bit from a checkpoint that holds the base, the adapters and their
// moments but no copy of the reference.
func TestGRPOWithLoRA(t *testing.T) {
	tr := toyLoRAGRPO(t, 3, toyPrompts(true))
	if !tr.Reference().Shared {
		t.Fatal("a LoRA policy's reference is not its shared base")
	}
	base := tr.Policy().(*nn.LlamaLM).Model
	before, _ := base.Params.ToHost()
	requireRewardRise(t, tr, 40, func(s int, rep *StepReport) {
		if s == 0 && rep.Metrics["kl_mean"] != 0 {
			t.Fatalf("KL before the first update %v, want exactly 0", rep.Metrics["kl_mean"])
		}
		if s >= 35 && rep.Metrics["kl_mean"] <= 0 {
			t.Fatalf("step %d: KL %v against the base after training", s+1, rep.Metrics["kl_mean"])
		}
	})
	after, _ := base.Params.ToHost()
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("base weight %d moved from %v to %v", i, before[i], after[i])
		}
	}

	straight := checkContinuity(t, 4, func(seed uint64) resumer {
		src, _ := newPrompts(7, false)
		return toyLoRAGRPO(t, seed, src)
	}, func(tr resumer, st *checkpoint.State, path string) error {
		if st.LoRA == nil || st.Extra[ReferenceExtra] != nil || len(st.AdamM) >= tr.(*GRPOTrainer).Policy().(*nn.LlamaLM).Model.Config.NumParams() {
			t.Fatalf("LoRA checkpoint: config %v, reference copy %v, %d moments", st.LoRA, st.Extra[ReferenceExtra] != nil, len(st.AdamM))
		}
		return tr.(*GRPOTrainer).Restore(st, path)
	})
	if straight[3].Metrics["kl_mean"] == 0 {
		t.Fatal("the resume test does not exercise the reference")
	}
}

func TestLoRAPolicyRefusals(t *testing.T) {
	p := toyLlama(t, cpu.NewWithThreads(1), 3)
	if err := p.Model.EnableLoRA(llama.LoRAConfig{Rank: 2, Alpha: 4, Dropout: 0.1}, 1); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultGRPOTrainerConfig()
	cfg.Train = toyTrainConfig()
	if _, err := NewGRPOTrainer(p, toy, toyPrompts(true), countA(), cfg); err == nil || !strings.Contains(err.Error(), "lora dropout") {
		t.Errorf("LoRA dropout: %v", err)
	}
	q := toyLlama(t, cpu.NewWithThreads(1), 3)
	if err := q.Model.EnableLoRA(llama.LoRAConfig{Rank: 2, Alpha: 4}, 1); err != nil {
		t.Fatal(err)
	}
	cfg.Train.RefSyncEvery, cfg.GRPO.Beta = 2, 0.1
	if _, err := NewGRPOTrainer(q, toy, toyPrompts(true), countA(), cfg); err == nil || !strings.Contains(err.Error(), "ref_sync_every") {
		t.Errorf("a synced LoRA reference: %v", err)
	}
}

// SFT micro-batches (a padded last one included) give the whole batch's losses and parameters
// to float32 rounding, for either model family.
func TestSFTMicroBatchesMatchTheWholeBatch(t *testing.T) {
	for _, family := range []string{"gpt2", "llama"} {
		run := func(micro int) ([]float64, []float32) {
			cfg := DefaultSFTConfig()
			cfg.Steps, cfg.Batch, cfg.LR, cfg.MinLR, cfg.EOS, cfg.MicroBatch = 5, 8, 1e-2, 1e-2, toyEOS, micro
			var p nn.LM = nn.GPT2(toyModel(t, 5))
			if family == "llama" {
				p = toyLlama(t, cpu.NewWithThreads(1), 5)
			}
			tr, err := NewSFTTrainer(p, toy, toyPrompts(false), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var losses []float64
			for range cfg.Steps {
				s, err := tr.TrainStep()
				if err != nil {
					t.Fatal(err)
				}
				losses = append(losses, float64(s.Loss))
			}
			params, _ := paramsToHost(p)
			return losses, params
		}
		wl, wp := run(0)
		ml, mp := run(3)
		for i := range wl {
			if d := wl[i] - ml[i]; d > 1e-5 || d < -1e-5 {
				t.Errorf("%s step %d: loss %.7f whole, %.7f in micro-batches", family, i+1, wl[i], ml[i])
			}
		}
		for i := range wp {
			if d := wp[i] - mp[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s parameter %d: %v whole, %v in micro-batches", family, i, wp[i], mp[i])
			}
		}
	}
}

// On Vulkan a Llama-family policy samples with the KV-cache decoder what the training forward
// then scores: the tokens align and the sampling-time and training-time log-probs agree to
// float32 rounding, with and without LoRA adapters.
func TestGRPOOnLlamaVulkanScoresWhatItSamples(t *testing.T) {
	be := testutil.Vulkan(t)
	for _, lora := range []bool{false, true} {
		p := toyLlama(t, be, 3)
		if lora {
			if err := p.Model.EnableLoRA(llama.LoRAConfig{Rank: 4, Alpha: 8}, 1); err != nil {
				t.Fatal(err)
			}
		}
		cfg := DefaultGRPOTrainerConfig()
		cfg.Train = toyTrainConfig()
		cfg.Train.LR, cfg.Train.MinLR = 1e-2, 1e-2
		cfg.GRPO.GroupSize, cfg.GRPO.Beta = 4, 0.02
		tr, err := NewGRPOTrainer(p, toy, toyPrompts(true), countA(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for s := range 3 {
			rep, err := tr.TrainStep()
			if err != nil {
				t.Fatal(err)
			}
			if m := rep.Metrics; m["token_alignment"] != 1 || m["logp_mismatch_max"] > 1e-3 {
				t.Fatalf("LoRA %v step %d: token alignment %v, log-prob mismatch %v", lora, s+1, m["token_alignment"], m["logp_mismatch_max"])
			}
		}
	}
}
