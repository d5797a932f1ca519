package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/bench"
	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
)

// benchCommand is `vkgrad bench`.
func benchCommand() command {
	return command{name: "bench", summary: "measure training, matmul, sampling or RL step speed (bench train | matmul | sample | rl)", usage: benchUsage, setup: func(fs *pflag.FlagSet) func([]string) error {
		f := &benchFlags{common: addCommonFlags(fs)}
		f.addFlags(fs)
		return f.run
	}}
}

// benchFlags are the flags of `vkgrad bench`.
type benchFlags struct {
	common        *commonFlags
	preset        string
	B, T, steps   int
	warmup        int
	asJSON        bool
	batches       []int
	newTokens     int
	profileKernel bool
	cpuProfile    string
	loraRank      int
	precision     string
	recompute     bool
	rl            rlBenchFlags
}

// addFlags registers the flags.
func (f *benchFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.preset, "preset", "gpt2-124m", "model shape: "+strings.Join(append(gpt2.PresetNames(), llama.PresetNames()...), ", "))
	fs.IntVar(&f.loraRank, "lora-rank", 0, "Llama-family presets: train (or sample with) LoRA adapters of this rank instead of every weight")
	fs.IntVar(&f.B, "batch", 4, "bench train: sequences per step")
	fs.IntVar(&f.T, "seq", 64, "bench train: tokens per sequence")
	fs.IntVar(&f.steps, "steps", 5, "measured repetitions (steps, batches of products lasting 2 ms or more, or generations); each matmul shape also runs for at least 0.5 s")
	fs.IntVar(&f.warmup, "warmup", 1, "unmeasured repetitions first")
	fs.StringVar(&f.precision, "precision", "fp32", precision.Help+"; bench train of a GPT-2 and bench rl include the loss scaling")
	fs.BoolVar(&f.recompute, "recompute", false, "bench train: "+recomputeHelp)
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object instead of text")
	fs.IntSliceVar(&f.batches, "batches", []int{1, 8}, "bench sample: batch sizes")
	fs.IntVar(&f.newTokens, "tokens", 32, "bench sample: tokens generated per row")
	fs.BoolVar(&f.profileKernel, "profile", false, "print time per kernel or op (GPU time on Vulkan, wall time on the CPU)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole benchmark to this file (read it with go tool pprof)")
	f.rl.addFlags(fs)
}

// run runs the benchmark args names and prints its report.
func (f *benchFlags) run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: vkgrad bench train|matmul|sample|rl [flags]")
	}
	if f.steps < 1 || f.warmup < 0 {
		return fmt.Errorf("--steps must be >= 1 and --warmup >= 0")
	}
	cl, err := benchCluster(f.common, args[0], f.preset)
	if err != nil {
		return err
	}
	log := f.common.logger()
	be, err := f.common.backend(log)
	if err != nil {
		return err
	}
	if _, err := precision.Set(be, f.precision); err != nil {
		return err
	}
	shape, err := f.shape()
	if err != nil {
		return err
	}
	stop, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	if args[0] != "train" { // bench train starts it after its warm-up steps
		if err := bench.StartProfile(be, f.profileKernel); err != nil {
			return err
		}
	}
	report, err := f.benchmark(be, cl, args[0], shape)
	if err != nil {
		return err
	}
	if f.profileKernel {
		report["profile"] = bench.KernelProfile(be)
	}
	report["preset"], report["device"], report["precision"] = f.preset, be.Name(), f.precision
	if !cl.Main() {
		return nil
	}
	if f.asJSON {
		raw, _ := json.Marshal(report)
		fmt.Fprintln(stdout, string(raw))
		return nil
	}
	bench.WriteText(stdout, report)
	return nil
}

// shape resolves --preset and checks --lora-rank against it.
func (f *benchFlags) shape() (bench.Shape, error) {
	var s bench.Shape
	var err error
	s.Llama, s.IsLlama = llamaPreset(f.preset)
	s.GPT2, err = gpt2.Preset(f.preset)
	if err != nil && !s.IsLlama {
		return s, fmt.Errorf("--preset: %w (or a Llama-family shape: %s)", err, strings.Join(llama.PresetNames(), ", "))
	}
	if f.loraRank < 0 || f.loraRank > 0 && !s.IsLlama {
		return s, fmt.Errorf("--lora-rank %d: want >= 0, and a Llama-family --preset", f.loraRank)
	}
	s.LoRARank = f.loraRank
	return s, nil
}

// startCPUProfile starts a Go CPU profile written to path (none when path is empty) and
// returns the function that stops it.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchmark runs the benchmark named kind on shape and returns its report.
func (f *benchFlags) benchmark(be tensor.Backend, cl *cluster.Member, kind string, s bench.Shape) (map[string]any, error) {
	switch {
	case kind == "rl":
		return f.benchRL(be, s)
	case kind == "train":
		return bench.Train(be, cl, s, bench.TrainOptions{Batch: f.B, Seq: f.T, Steps: f.steps, Warmup: f.warmup,
			Profile: f.profileKernel, Precision: f.precision, Recompute: f.recompute})
	case kind == "sample":
		if err := f.checkSample(s); err != nil {
			return nil, err
		}
		return bench.Sample(be, s, bench.SampleOptions{Batches: f.batches, Tokens: f.newTokens, Reps: f.steps})
	case kind == "matmul" && s.IsLlama:
		return nil, fmt.Errorf("bench matmul times GPT-2's shapes: give a GPT-2 --preset")
	case kind == "matmul":
		return bench.Matmul(be, s.GPT2, f.B*f.T, f.steps, f.warmup)
	default:
		return nil, fmt.Errorf("unknown benchmark %q: want train, matmul, sample or rl", kind)
	}
}

// checkSample says why bench sample cannot decode --tokens after its prompt in s's context,
// or names the first of --batches below 1.
func (f *benchFlags) checkSample(s bench.Shape) error {
	maxT := s.Context()
	if maxT <= 0 {
		return fmt.Errorf("preset has no max_position_embeddings")
	}
	if bench.SamplePrompt+f.newTokens > maxT {
		return fmt.Errorf("--tokens %d: prompt + tokens exceed the context of %d", f.newTokens, maxT)
	}
	for _, B := range f.batches {
		if B < 1 {
			return fmt.Errorf("--batches: %d must be >= 1", B)
		}
	}
	return nil
}

// benchUsage says which flags each benchmark reads.
const benchUsage = `vkgrad bench train|matmul|sample|rl [flags]

  bench train    a training step of --preset (GPT-2 or Llama-family) at --batch x --seq: ms/step,
                 tokens/s, GFLOP/s and the fraction of the FMA peak, peak RSS; --steps, --warmup,
                 --lora-rank
  bench matmul   GPT-2 --preset's training products at --batch x --seq rows: GFLOP/s per shape;
                 --steps, --warmup
  bench sample   KV-cache decoding of --preset for each of --batches after a 16-token prompt:
                 tokens/s, the fraction of the read bandwidth (the host's, or a GPU's copy rate;
                 every weight is read once a step: the bound at batch 1) and of the FMA peak (the
                 bound of a wide batch); --tokens,
                 --steps (best of), --lora-rank
  bench rl       GRPO or PPO steps (--algo) of --preset's random weights or --init's model on
                 --prompts synthetic prompts of --prompt-len tokens, --group-size completions each
                 of --max-new-tokens (EOS is never drawn), by phase: prefill, decode, reward,
                 old log-probs (PPO; GRPO's are its first update's forward pass), reference,
                 update (forward and backward), optimizer; tokens/s, GFLOP/s against the FMA peak,
                 GB/s against the read bandwidth (decode: weights and key/value cache read per
                 step; optimizer: AdamW's traffic), step time and peak RSS. decode counts the
                 tokens fed back, rollout_tokens_per_s every sampled token; --steps (mean of),
                 --warmup, --micro-batch, --gen-batch, --lora-rank, --init
  every one      --device, --threads, --json, --profile (time per kernel), --cpuprofile

Under mpirun, bench train (GPT-2) runs data-parallel: each rank computes one micro-batch of
--batch x --seq and the gradients are summed over the ranks; tokens/s counts every rank's
tokens; comm_bytes_per_step is what rank 0 sends, comm_seconds_per_step the time its MPI
thread spends summing, mostly beside the backward pass, and comm_wait_seconds_per_step the
part the step waits for after it.`

// llamaPreset returns a Llama-family preset's shape when name is one.
func llamaPreset(name string) (llama.Config, bool) {
	c, err := llama.Preset(name)
	return c, err == nil
}

// benchCluster joins the MPI job bench train was launched in (nil for one process); the other
// benchmarks run alone.
func benchCluster(common *commonFlags, kind, preset string) (*cluster.Member, error) {
	if kind != "train" {
		return nil, nil
	}
	cl, err := common.joinCluster()
	if err != nil || cl == nil {
		return cl, err
	}
	if _, isLlama := llamaPreset(preset); isLlama {
		return nil, fmt.Errorf("bench train under MPI times GPT-2 presets only")
	}
	if !cl.Main() {
		common.quiet = true
	}
	return cl, nil
}
