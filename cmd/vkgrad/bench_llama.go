package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// newRandomLlama makes a preset's model with random weights, and its LoRA adapters when rank
// is positive.
func newRandomLlama(be tensor.Backend, cfg llama.Config, loraRank int) (*llama.Model, error) {
	m, err := llama.New(be, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, err
	}
	if loraRank > 0 {
		return m, m.EnableLoRA(llama.LoRAConfig{Rank: loraRank, Alpha: 2 * float64(loraRank)}, 1)
	}
	return m, nil
}

// benchTrainLlama times a Llama-family training step (forward, the vocabulary-chunked loss,
// backward and AdamW) on random tokens: of every weight, or of LoRA adapters of loraRank;
// recomputing activations in the backward when recompute.
func benchTrainLlama(be tensor.Backend, cfg llama.Config, loraRank int, recompute bool, B, T, steps, warmup int, profile bool) (map[string]any, error) {
	m, err := newRandomLlama(be, cfg, loraRank)
	if err != nil {
		return nil, err
	}
	m.Recompute = recompute
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
	rep, err := timeTrainSteps(be, step, cfg.TrainFLOPsPerToken(T)*float64(B*T), B, T, steps, warmup, profile)
	if rep != nil {
		rep["trained_params"], rep["lora_rank"] = params.Len(), loraRank
		if recompute {
			rep["recompute"] = true
		}
	}
	return rep, err
}

// benchSampleLlama times KV-cache decoding of a Llama-family model.
func benchSampleLlama(be tensor.Backend, cfg llama.Config, loraRank int, batches []int, newTokens, reps int) (map[string]any, error) {
	m, err := newRandomLlama(be, cfg, loraRank)
	if err != nil {
		return nil, err
	}
	open := func(B, limit int) (decoder, error) { return m.NewDecoder(B, limit) }
	maxT := cfg.MaxPositions
	if maxT <= 0 {
		return nil, fmt.Errorf("preset has no max_position_embeddings")
	}
	return timeDecoding(be, open, cfg.Vocab, maxT, llamaCost(cfg), m.DecoderCopyBytes(), batches, newTokens, reps)
}
