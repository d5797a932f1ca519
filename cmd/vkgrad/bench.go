package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/internal/timing"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
	"github.com/vkgrad/vkgrad/vk"
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
	fs.StringVar(&f.precision, "precision", "fp32", precisionHelp+"; bench train of a GPT-2 and bench rl include the loss scaling")
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
	if _, err := setPrecision(be, f.precision); err != nil {
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
		if err := startProfile(be, f.profileKernel); err != nil {
			return err
		}
	}
	report, err := f.benchmark(be, cl, args[0], shape)
	if err != nil {
		return err
	}
	if f.profileKernel {
		report["profile"] = kernelProfile(be)
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
	if args[0] == "rl" {
		printRLBench(report)
		return nil
	}
	printBench(report)
	return nil
}

// benchShape is the model --preset names: a Llama-family one, or GPT-2's.
type benchShape struct {
	gpt2    gpt2.Config
	llama   llama.Config
	isLlama bool
}

// shape resolves --preset and checks --lora-rank against it.
func (f *benchFlags) shape() (benchShape, error) {
	var s benchShape
	var err error
	s.llama, s.isLlama = llamaPreset(f.preset)
	s.gpt2, err = gpt2.Preset(f.preset)
	if err != nil && !s.isLlama {
		return s, fmt.Errorf("--preset: %w (or a Llama-family shape: %s)", err, strings.Join(llama.PresetNames(), ", "))
	}
	if f.loraRank < 0 || f.loraRank > 0 && !s.isLlama {
		return s, fmt.Errorf("--lora-rank %d: want >= 0, and a Llama-family --preset", f.loraRank)
	}
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
func (f *benchFlags) benchmark(be tensor.Backend, cl *cluster.Member, kind string, s benchShape) (map[string]any, error) {
	switch {
	case kind == "rl":
		return f.benchRL(be, s)
	case kind == "train" && s.isLlama:
		return benchTrainLlama(be, s.llama, f.loraRank, f.recompute, f.B, f.T, f.steps, f.warmup, f.profileKernel)
	case kind == "sample" && s.isLlama:
		return benchSampleLlama(be, s.llama, f.loraRank, f.batches, f.newTokens, f.steps)
	case kind == "matmul" && s.isLlama:
		return nil, fmt.Errorf("bench matmul times GPT-2's shapes: give a GPT-2 --preset")
	case kind == "train":
		return benchTrain(be, cl, s.gpt2, trainBenchRun{f.precision, f.recompute}, f.B, f.T, f.steps, f.warmup, f.profileKernel)
	case kind == "matmul":
		return benchMatmul(be, s.gpt2, f.B*f.T, f.steps, f.warmup)
	case kind == "sample":
		return benchSample(be, s.gpt2, f.batches, f.newTokens, f.steps)
	default:
		return nil, fmt.Errorf("unknown benchmark %q: want train, matmul, sample or rl", kind)
	}
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

// recordStats is a Vulkan backend's count of dispatches, barriers, queue submissions and
// descriptor-set writes so far; nil on the CPU.
func recordStats(be tensor.Backend) *vk.RecordStats {
	v, ok := be.(*vk.Backend)
	if !ok {
		return nil
	}
	s := v.Device().RecordStats()
	return &s
}

// llamaPreset returns a Llama-family preset's shape when name is one.
func llamaPreset(name string) (llama.Config, bool) {
	c, err := llama.Preset(name)
	return c, err == nil
}

// peak measures the device's multiply-add peak in this process: the CPU's FMA rate on its
// threads, or a Vulkan device's probe (threads 0); 0 where it cannot be measured.
func peak(be tensor.Backend) (gflops float64, threads int) {
	switch b := be.(type) {
	case *cpu.Backend:
		return gemm.PeakGFLOPS(b.Threads()), b.Threads()
	case *vk.Backend:
		g, err := b.PeakGFLOPS()
		if err != nil {
			return 0, 0
		}
		return g, 0
	}
	return 0, 0
}

// readBandwidth is the memory bandwidth decoding is read against, in bytes per second: a
// Vulkan device's copy probe (bytes read and written), else the host's read rate over all
// cores; reading a GPU's decoding against host memory once gave fractions above 1.
func readBandwidth(be tensor.Backend) float64 {
	if b, ok := be.(*vk.Backend); ok {
		if gbps, err := b.PeakGBps(); err == nil && gbps > 0 {
			return gbps * 1e9
		}
	}
	return sysinfo.ReadBandwidth(512 << 20)
}

// coopMatPeak is a Vulkan device's cooperative-matrix rate in GFLOP/s (the 16-bit products'
// peak), 0 where it has none.
func coopMatPeak(be tensor.Backend) float64 {
	if b, ok := be.(*vk.Backend); ok {
		if g, err := b.PeakCoopMatGFLOPS(); err == nil {
			return g
		}
	}
	return 0
}

// setCoopMatPeak records the device's cooperative-matrix rate beside the float32 one, and
// achieved (GFLOP/s) as a fraction of it, where the device has one.
func setCoopMatPeak(rep map[string]any, cm, achieved float64) {
	if cm > 0 {
		rep["peak_coopmat_gflops"] = cm
		rep["coopmat_peak_fraction"] = achieved / cm
	}
}

// setPeak records the peak a report's fractions are read against, and the CPU threads it
// was measured on (none for a Vulkan device).
func setPeak(rep map[string]any, gflops float64, threads int) {
	rep["peak_gflops"] = gflops
	if threads > 0 {
		rep["peak_threads"] = threads
	}
}

// settle runs a garbage collection before a timed region: a cycle started by the setup's
// allocations would otherwise run concurrently and take a core from the measurement.
func settle() { runtime.GC() }

// benchCluster joins the MPI job bench train was launched in (nil for one process); the other
// benchmarks run alone.
func benchCluster(common *commonFlags, bench, preset string) (*cluster.Member, error) {
	if bench != "train" {
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

// trainBenchRun are bench train's settings that leave the numbers alone.
type trainBenchRun struct {
	precision string // --precision
	recompute bool   // --recompute
}

func benchTrain(be tensor.Backend, cl *cluster.Member, cfg gpt2.Config, run trainBenchRun, B, T, steps, warmup int, profile bool) (map[string]any, error) {
	m, err := gpt2.New(be, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, err
	}
	r := rng.New(2)
	tokens := make([]int32, (warmup+steps+1)*B*(T+1)+1)
	for i := range tokens {
		tokens[i] = int32(r.Intn(cfg.VocabSize))
	}
	ranks := 1
	if cl != nil {
		ranks = cl.Comm().Size()
	}
	tc := train.DefaultConfig()
	tc.Batch, tc.Seq, tc.Steps, tc.ValFraction, tc.Warmup, tc.MicroBatches, tc.Precision = B, T, 1<<30, 0, 0, ranks, run.precision
	tc.Recompute = run.recompute
	tr, err := train.New(nn.GPT2(m), tc, tokens, "random tokens")
	if err != nil {
		return nil, err
	}
	if cl != nil {
		if err := tr.SetComm(cl.Comm()); err != nil {
			return nil, err
		}
	}
	taken := 0
	var atTimed mpi.ReduceStats // the reductions' counts when the timed steps start
	step := func() error {
		if taken == warmup {
			atTimed = tr.CommStats()
		}
		taken++
		_, err := tr.TrainStep()
		return err
	}
	rep, err := timeTrainSteps(be, step, cfg.TrainFLOPsPerToken(T)*float64(B*T), B, T, steps, warmup, profile)
	if err == nil && run.recompute {
		rep["recompute"] = true
	}
	if err != nil || cl == nil {
		return rep, err
	}
	// timeTrainSteps saw one rank's share; the job's step holds every rank's micro-batch.
	rep["ranks"] = ranks
	rep["tokens_per_s"] = rep["tokens_per_s"].(float64) * float64(ranks)
	end, n := tr.CommStats(), float64(steps)
	rep["comm_bytes_per_step"] = float64(end.BytesSent-atTimed.BytesSent) / n
	rep["comm_seconds_per_step"] = (end.Seconds - atTimed.Seconds) / n
	rep["comm_wait_seconds_per_step"] = (end.WaitedSeconds - atTimed.WaitedSeconds) / n
	return rep, nil
}

// timeTrainSteps runs warmup steps, then times steps of them and reports ms/step, tokens/s and
// the fraction of the FMA peak measured in the same process (flops is one step's work).
func timeTrainSteps(be tensor.Backend, step func() error, flops float64, B, T, steps, warmup int, profile bool) (map[string]any, error) {
	for i := 0; i < warmup; i++ {
		if err := step(); err != nil {
			return nil, err
		}
	}
	peakBefore, _ := peak(be)
	if err := startProfile(be, profile); err != nil {
		return nil, err
	}
	settle()
	stats0 := recordStats(be)
	start := time.Now()
	for i := 0; i < steps; i++ {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := be.Sync(); err != nil {
		return nil, err
	}
	perStep := time.Since(start).Seconds() / float64(steps)
	stats1 := recordStats(be)
	rep := map[string]any{"bench": "train", "batch": B, "seq": T, "steps": steps,
		"ms_per_step": perStep * 1e3, "tokens_per_s": float64(B*T) / perStep,
		"model_gflop_per_step": flops / 1e9, "achieved_gflops": flops / perStep / 1e9,
		"peak_rss_bytes": sysinfo.PeakRSS()}
	if stats0 != nil {
		n := float64(steps)
		rep["dispatches_per_step"] = float64(stats1.Dispatches-stats0.Dispatches) / n
		rep["barriers_per_step"] = float64(stats1.Barriers-stats0.Barriers) / n
		rep["submits_per_step"] = float64(stats1.Submits-stats0.Submits) / n
		rep["descriptor_writes_per_step"] = float64(stats1.DescriptorWrites-stats0.DescriptorWrites) / n
	}
	// The peak is measured before and after the steps and the higher kept, so a measurement
	// taken while another process held a core does not inflate the fraction.
	if p, th := peak(be); p > 0 {
		p = max(p, peakBefore)
		setPeak(rep, p, th)
		rep["peak_fraction"] = flops / perStep / 1e9 / p
	}
	setCoopMatPeak(rep, coopMatPeak(be), flops/perStep/1e9)
	return rep, nil
}

// benchMatmul times GPT-2's training products at M rows: forward (x @ Wᵀ) and both backward forms.
// Each matmul shape is timed for --steps batches of calls (matmulBatchTime) and at least
// matmulMinTime (up to matmulMaxCalls calls): on a shared machine a core can be taken away for tens of
// milliseconds at a time, which would otherwise cover every call of a fast shape and move
// its median.
const (
	matmulMinTime  = 500 * time.Millisecond
	matmulMaxCalls = 5000
)

func benchMatmul(be tensor.Backend, cfg gpt2.Config, M, steps, warmup int) (map[string]any, error) {
	p, th := peak(be)
	var rows []map[string]any
	for si, s := range matmulShapes(cfg, M) {
		times, calls, err := timeMatmul(be, s, steps, warmup)
		if err != nil {
			return nil, err
		}
		mean, median := meanMedian(times)
		g := 2 * float64(s.p.M) * float64(s.p.N) * float64(s.p.K) / median / 1e9
		rows = append(rows, map[string]any{"shape": s.name, "ms": median * 1e3, "mean_ms": mean * 1e3, "gflops": g, "calls": calls})
		if si%3 == 2 {
			// Measured again through the run, the highest kept: one measurement taken while
			// another process held a core would understate the peak and inflate every fraction.
			if q, _ := peak(be); q > p {
				p = q
			}
		}
	}
	rep := map[string]any{"bench": "matmul", "rows": rows, "peak_rss_bytes": sysinfo.PeakRSS()}
	if p > 0 {
		setPeak(rep, p, th)
		for _, row := range rows {
			row["peak_fraction"] = row["gflops"].(float64) / p
		}
	}
	if cm := coopMatPeak(be); cm > 0 {
		rep["peak_coopmat_gflops"] = cm
		for _, row := range rows {
			row["coopmat_peak_fraction"] = row["gflops"].(float64) / cm
		}
	}
	return rep, nil
}

// matmulShape is one product bench matmul times.
type matmulShape struct {
	name    string
	p       tensor.MatMulParams
	a, b, o int // element counts
}

// matmulShapes are GPT-2's training products at M rows, three per linear layer: forward
// (x @ Wᵀ), then the gradients of the input and of the weight.
func matmulShapes(cfg gpt2.Config, M int) []matmulShape {
	C, Vp := cfg.Channels, cfg.PaddedVocabSize
	var shapes []matmulShape
	for _, nk := range [][2]int{{3 * C, C}, {C, C}, {4 * C, C}, {C, 4 * C}, {Vp, C}} {
		N, K := nk[0], nk[1]
		shapes = append(shapes,
			matmulShape{fmt.Sprintf("fwd %dx%dx%d (B^T)", M, K, N), tensor.MatMulParams{M: M, N: N, K: K, TransB: true}, M * K, N * K, M * N},
			matmulShape{fmt.Sprintf("dA  %dx%dx%d", M, N, K), tensor.MatMulParams{M: M, N: K, K: N}, M * N, N * K, M * K},
			matmulShape{fmt.Sprintf("dB  %dx%dx%d (A^T)", N, M, K), tensor.MatMulParams{M: N, N: K, K: M, TransA: true}, M * N, M * K, N * K})
	}
	return shapes
}

// matmulBatchTime is the least time of one timed sample. A GPU computes a small product in
// microseconds, less than it takes to submit the product and wait for it, so a sample is a
// batch of calls back to back, as many as last this long, and a call's time is its share.
const matmulBatchTime = 2 * time.Millisecond

// timeMatmul returns a call's time in seconds in each timed batch of s, and the calls timed:
// warmup calls first, then batches of as many calls as last matmulBatchTime, at least steps
// batches and matmulMinTime (up to matmulMaxCalls calls).
func timeMatmul(be tensor.Backend, s matmulShape, steps, warmup int) ([]float64, int, error) {
	var ts [3]*tensor.Tensor
	for i, n := range []int{s.a, s.b, s.o} {
		t, err := tensor.New(be, tensor.Float32, n)
		if err != nil {
			return nil, 0, err
		}
		defer be.Free(t.Storage)
		ts[i] = t
	}
	a, b, o := ts[0], ts[1], ts[2]
	be.Fill(a, 0.5)
	be.Fill(b, 0.25)
	for i := 0; i < warmup; i++ {
		be.MatMul(o, a, b, nil, s.p)
	}
	if err := be.Sync(); err != nil {
		return nil, 0, err
	}
	settle()
	batch := func(n int) (time.Duration, error) {
		return timing.Run(func() error {
			for range n {
				be.MatMul(o, a, b, nil, s.p)
			}
			return nil
		}, be.Sync)
	}
	first := time.Now()
	n, took, err := timing.Grow(matmulBatchTime, batch)
	if err != nil {
		return nil, 0, err
	}
	times, calls := []float64{took.Seconds() / float64(n)}, n
	for len(times) < steps || time.Since(first) < matmulMinTime && calls < matmulMaxCalls {
		took, err := batch(n)
		if err != nil {
			return nil, 0, err
		}
		times, calls = append(times, took.Seconds()/float64(n)), calls+n
	}
	return times, calls, nil
}

// meanMedian returns the mean and the median of xs (which it sorts). The median is what the
// matmul rows report: on a shared machine a call that loses its core to another process
// moves the mean, not the median.
func meanMedian(xs []float64) (mean, median float64) {
	slices.Sort(xs)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	n := len(xs)
	median = xs[n/2]
	if n%2 == 0 {
		median = (xs[n/2-1] + xs[n/2]) / 2
	}
	return mean, median
}

// benchSample times KV-cache decoding: each new token reads every weight once, so the rate is
// bounded by memory bandwidth, measured here with a streaming read.
func benchSample(be tensor.Backend, cfg gpt2.Config, batches []int, newTokens, reps int) (map[string]any, error) {
	m, err := gpt2.New(be, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, err
	}
	open := func(B, limit int) (decoder, error) { return m.NewDecoder(B, limit) }
	return timeDecoding(be, open, cfg.VocabSize, cfg.MaxSeqLen, gpt2Cost(cfg), m.DecoderCopyBytes(), batches, newTokens, reps)
}

// decoder is a KV-cache decoder of either model family.
type decoder interface {
	Step(tokens []int32, Tq int) ([]float32, error)
	Reset()
	Close()
}

// timeDecoding measures decoding steps per second for each batch size after a 16-token
// prompt, and reads them against both limits of decoding: the weight bytes read per second
// against the machine's read bandwidth (every weight is read once per step), which bounds a
// narrow batch, and the work per second against the FMA peak, which bounds a wide one.
//
// A decoder holding bfloat16 weight copies (copyBytes of them) reads those instead of the
// float32 weights in steps of at most the backend's HalfWeightRows rows: copyBytes fewer bytes.
func timeDecoding(be tensor.Backend, open func(B, limit int) (decoder, error), vocab, maxT int, cost modelCost, copyBytes int64, batches []int, newTokens, reps int) (map[string]any, error) {
	const prompt = 16
	if prompt+newTokens > maxT {
		return nil, fmt.Errorf("--tokens %d: prompt + tokens exceed the context of %d", newTokens, maxT)
	}
	weightBytes := cost.weightBytes
	// A timed step's work per row, averaged over the steps: each feeds the token at position
	// prompt+t and attends that many positions.
	var rowFLOPs float64
	for t := 1; t < newTokens; t++ {
		rowFLOPs += cost.tokenFLOPs(prompt+t) + 2*cost.head
	}
	rowFLOPs /= float64(max(1, newTokens-1))
	peakBefore, _ := peak(be)
	bw := readBandwidth(be)
	var rows []map[string]any
	for _, B := range batches {
		if B < 1 {
			return nil, fmt.Errorf("--batches: %d must be >= 1", B)
		}
		d, err := open(B, prompt+newTokens)
		if err != nil {
			return nil, err
		}
		prompts := make([][]int32, B)
		for i := range prompts {
			prompts[i] = make([]int32, prompt)
			for j := range prompts[i] {
				prompts[i][j] = int32((i*31 + j*7) % vocab)
			}
		}
		best := 0.0
		for r := 0; r < reps; r++ {
			if _, err := d.Step(flatten(prompts), prompt); err != nil {
				return nil, err
			}
			start := time.Now()
			next := make([]int32, B)
			for t := 0; t < newTokens-1; t++ {
				if _, err := d.Step(next, 1); err != nil {
					return nil, err
				}
			}
			stepsPerS := float64(newTokens-1) / time.Since(start).Seconds()
			best = max(best, stepsPerS)
			d.Reset()
		}
		d.Close()
		read := weightBytes
		if h, ok := tensor.HalfWeightsFor(be); ok && B <= h.HalfWeightRows() {
			read -= float64(copyBytes)
		}
		row := map[string]any{"batch": B, "tokens_per_s": best * float64(B), "steps_per_s": best,
			"weight_gb_per_s": best * read / 1e9, "bandwidth_fraction": best * read / bw,
			"gflops": best * float64(B) * rowFLOPs / 1e9}
		rows = append(rows, row)
	}
	rep := map[string]any{"bench": "sample", "rows": rows, "read_bandwidth_gb_per_s": bw / 1e9,
		"weight_bytes": weightBytes, "weight_copy_bytes": copyBytes, "peak_rss_bytes": sysinfo.PeakRSS()}
	// Measured before and after the decoding, the higher kept, as bench train does.
	if p, th := peak(be); max(p, peakBefore) > 0 {
		p = max(p, peakBefore)
		setPeak(rep, p, th)
		for _, row := range rows {
			row["peak_fraction"] = row["gflops"].(float64) / p
		}
	}
	return rep, nil
}

func flatten(rows [][]int32) []int32 {
	var out []int32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// startProfile (re)starts the per-kernel profile, after warm-up so it covers measured work only.
func startProfile(be tensor.Backend, on bool) error {
	if p, ok := be.(tensor.Profiler); ok && on {
		if err := be.Sync(); err != nil {
			return err
		}
		p.SetProfiling(true)
	}
	return nil
}

func kernelProfile(be tensor.Backend) any {
	p, ok := be.(tensor.Profiler)
	if !ok {
		return "kernel timing needs a Vulkan device"
	}
	rows := p.KernelProfile()
	prober, ok := be.(interface{ MeasurePeak() (vk.Peak, error) })
	if !ok {
		return rows
	}
	peak, err := prober.MeasurePeak()
	if err != nil {
		return rows
	}
	// Each kernel's share of what the device does at best: of its multiply-add rate or its
	// memory bandwidth, whichever the kernel comes closer to (its roofline).
	for _, r := range rows {
		frac := 0.0
		if g := toFloat(r["gflops"]); g > 0 {
			frac = g / peak.GFLOPS
		}
		if b := toFloat(r["gbps"]); b > 0 {
			frac = max(frac, b/peak.GBps)
		}
		if frac > 0 {
			r["of_peak"] = math.Round(frac*1000) / 1000
		}
	}
	return append(rows, map[string]any{"kernel": "(device peak)", "gflops": math.Round(peak.GFLOPS*10) / 10, "gbps": math.Round(peak.GBps*10) / 10})
}

// readable writes a report value for a person: integers whole, fractions to four significant
// digits without an exponent.
func readable(v any) string {
	x, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	switch ax := math.Abs(x); {
	case x == math.Trunc(x) && ax < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 1000:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func printBench(r map[string]any) {
	fmt.Fprintf(stdout, "%s on %s, preset %s", r["bench"], r["device"], r["preset"])
	if p, ok := r["precision"].(string); ok && p != "fp32" {
		fmt.Fprintf(stdout, ", %s products", p)
	}
	if r["recompute"] == true {
		fmt.Fprint(stdout, ", recompute")
	}
	fmt.Fprintln(stdout)
	if rows, ok := r["rows"].([]map[string]any); ok {
		for _, row := range rows {
			raw, _ := json.Marshal(row)
			fmt.Fprintf(stdout, "  %s\n", raw)
		}
	}
	keys := []string{"ranks", "batch", "seq", "steps", "lora_rank", "trained_params", "ms_per_step", "tokens_per_s", "model_gflop_per_step", "achieved_gflops",
		"peak_gflops", "peak_threads", "peak_fraction", "peak_coopmat_gflops", "coopmat_peak_fraction", "dispatches_per_step", "barriers_per_step", "submits_per_step", "descriptor_writes_per_step",
		"read_bandwidth_gb_per_s", "weight_bytes", "weight_copy_bytes", "comm_bytes_per_step", "comm_seconds_per_step", "comm_wait_seconds_per_step", "peak_rss_bytes"}
	for _, k := range keys {
		if v, ok := r[k]; ok {
			fmt.Fprintf(stdout, "  %-26s %s\n", k, readable(v))
		}
	}
	switch p := r["profile"].(type) {
	case []map[string]any:
		fmt.Fprintf(stdout, "\n  %-32s %7s %11s %11s %7s %9s %8s %8s\n", "kernel", "calls", "total ms", "mean us", "share", "GFLOP/s", "GB/s", "of peak")
		for _, row := range p {
			if row["calls"] == nil { // the device's peak, measured by probes
				fmt.Fprintf(stdout, "  %-32v %7s %11s %11s %7s %9.1f %8.1f\n", row["kernel"], "", "", "", "", toFloat(row["gflops"]), toFloat(row["gbps"]))
				continue
			}
			fmt.Fprintf(stdout, "  %-32v %7v %11.3f %11.1f %6.1f%% %9s %8s %8s\n", row["kernel"], row["calls"], row["total_ms"], row["mean_us"],
				100*toFloat(row["share"]), optional(row["gflops"], "%.1f"), optional(row["gbps"], "%.1f"), optional(row["of_peak"], "%.1f%%", 100))
		}
	case nil:
	default:
		fmt.Fprintf(stdout, "  profile: %v\n", p)
	}
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}

// optional formats a profile value, scaled, or leaves the column blank when it is absent.
func optional(v any, format string, scale ...float64) string {
	if v == nil {
		return ""
	}
	x := toFloat(v)
	for _, s := range scale {
		x *= s
	}
	return fmt.Sprintf(format, x)
}
