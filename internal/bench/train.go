package bench

import (
	"time"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// TrainOptions are a training benchmark's settings.
type TrainOptions struct {
	Batch, Seq    int // sequences per step, tokens per sequence
	Steps, Warmup int // timed steps, and untimed ones before them
	// Profile starts the per-kernel profile after the warm-up steps.
	Profile bool
	// Precision is the trainer's product precision (GPT-2): fp16 scales the loss as a run does.
	Precision string
	// Recompute recomputes activations in the backward pass.
	Recompute bool
}

// Train times training steps of s on random tokens and reports ms/step, tokens/s and the
// fraction of the FMA peak. Under cl (nil for one process; GPT-2 only) each rank trains one
// micro-batch of the step and the report counts the whole job's tokens and what rank 0 sent.
func Train(be tensor.Backend, cl *cluster.Member, s Shape, o TrainOptions) (map[string]any, error) {
	if s.IsLlama {
		return trainLlama(be, s.Llama, s.LoRARank, o)
	}
	return trainGPT2(be, cl, s.GPT2, o)
}

func trainGPT2(be tensor.Backend, cl *cluster.Member, cfg gpt2.Config, o TrainOptions) (map[string]any, error) {
	B, T, steps, warmup := o.Batch, o.Seq, o.Steps, o.Warmup
	m, err := newRandomGPT2(be, cfg)
	if err != nil {
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
	tc.Batch, tc.Seq, tc.Steps, tc.ValFraction, tc.Warmup, tc.MicroBatches, tc.Precision = B, T, 1<<30, 0, 0, ranks, o.Precision
	tc.Recompute = o.Recompute
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
	rep, err := timeTrainSteps(be, step, cfg.TrainFLOPsPerToken(T)*float64(B*T), o)
	if err == nil && o.Recompute {
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

// trainLlama times a Llama-family training step (forward, the vocabulary-chunked loss,
// backward and AdamW) on random tokens: of every weight, or of LoRA adapters of loraRank;
// recomputing activations in the backward when o.Recompute.
func trainLlama(be tensor.Backend, cfg llama.Config, loraRank int, o TrainOptions) (map[string]any, error) {
	B, T := o.Batch, o.Seq
	m, err := newRandomLlama(be, cfg, loraRank)
	if err != nil {
		return nil, err
	}
	m.Recompute = o.Recompute
	if loraRank == 0 {
		if err := m.EnableGrads(); err != nil {
			return nil, err
		}
	}
	params, grads := m.Trainable()
	opt, err := optim.NewAdamW(params, optim.DefaultAdamW())
	if err != nil {
		return nil, err
	}
	r := rng.New(2)
	in, tg := make([]int32, B*T), make([]int32, B*T)
	for i := range in {
		in[i], tg[i] = int32(r.Intn(cfg.Vocab)), int32(r.Intn(cfg.Vocab))
	}
	tp := autograd.NewTape()
	step := func() error {
		m.ZeroTrainableGrads()
		if _, err := m.ForwardLoss(tp, in, tg, B, T); err != nil {
			return err
		}
		if err := m.Backward(tp); err != nil {
			return err
		}
		opt.Update(params, grads, 1e-4)
		return nil
	}
	rep, err := timeTrainSteps(be, step, cfg.TrainFLOPsPerToken(T)*float64(B*T), o)
	if rep != nil {
		rep["trained_params"], rep["lora_rank"] = params.Len(), loraRank
		if o.Recompute {
			rep["recompute"] = true
		}
	}
	return rep, err
}

// timeTrainSteps runs o.Warmup steps, then times o.Steps of them and reports ms/step, tokens/s
// and the fraction of the FMA peak measured in the same process (flops is one step's work).
func timeTrainSteps(be tensor.Backend, step func() error, flops float64, o TrainOptions) (map[string]any, error) {
	B, T, steps := o.Batch, o.Seq, o.Steps
	for i := 0; i < o.Warmup; i++ {
		if err := step(); err != nil {
			return nil, err
		}
	}
	peakBefore, _ := peak(be)
	if err := StartProfile(be, o.Profile); err != nil {
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
		setPeak(rep, be, p, th)
		rep["peak_fraction"] = flops / perStep / 1e9 / p
	}
	setCoopMatPeak(rep, coopMatPeak(be), flops/perStep/1e9)
	return rep, nil
}
