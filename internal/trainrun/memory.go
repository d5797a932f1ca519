package trainrun

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
)

// ErrDryRun is returned by the checks of a [Memory] with DryRun set, once the footprint is
// printed: the run stops there without an error to report.
var ErrDryRun = errors.New("dry run")

// Memory is what a training run's memory check needs to know about the run.
type Memory struct {
	Batch, Seq   int // sequences per micro-batch and tokens per sequence
	MicroBatches int // micro-batches per step; more than one keeps gradient copies on the host
	Recompute    bool
	// Distributed says the run spans processes, which also sum gradients on the host.
	Distributed bool
	// DryRun prints the footprint to Out and stops with ErrDryRun instead of logging it.
	DryRun bool
	Out    io.Writer
}

// CheckGPT2 logs the footprint of training a GPT-2 of shape cfg on be (with DryRun, prints it
// and returns ErrDryRun), and refuses a run that cannot fit, saying which --batch would.
func (c Memory) CheckGPT2(be tensor.Backend, cfg gpt2.Config, log zerolog.Logger) error {
	opts := gpt2.FootprintOptions{Training: true, Recompute: c.Recompute}
	largest := func(budget int64) int { return gpt2.LargestBatchWith(be, cfg, c.Seq, c.Batch, opts, budget) }
	noFit := "use a shorter --seq or a smaller model"
	if !c.Recompute {
		noFit = "use --recompute, a shorter --seq or a smaller model"
	}
	fp, err := gpt2.EstimateFootprintWith(be, cfg, c.Batch, c.Seq, opts)
	if err != nil {
		return c.unplaceable(be, err, largest, noFit)
	}
	host := int64(0)
	if k := c.MicroBatches; k > 1 || c.Distributed {
		host = fp.Params * int64(k+1) // micro-batch gradients and their sum, on the host
	}
	line := fmt.Sprintf("memory on %s: %v", be.Name(), fp)
	if host > 0 {
		line += fmt.Sprintf("; host gradient copies %s", tensor.HumanBytes(host))
	}
	return c.checkFootprint(be, line, fp.Total(), largest, noFit, log)
}

// CheckLlama is CheckGPT2 for training the Llama-family model m, its LoRA adapters counted
// when it has them.
func (c Memory) CheckLlama(be tensor.Backend, m *llama.Model, log zerolog.Logger) error {
	opts := llama.FootprintOptions{Training: true, Recompute: c.Recompute}
	if lc, ok := m.LoRA(); ok {
		opts.LoRA = &lc
	}
	largest := func(budget int64) int { return largestLlamaBatch(be, m.Config, c.Seq, c.Batch, opts, budget) }
	noFit := "use a shorter --seq, LoRA or a smaller model"
	if !c.Recompute {
		noFit = "use --recompute, a shorter --seq, LoRA or a smaller model"
	}
	fp, err := llama.EstimateFootprintWith(be, m.Config, c.Batch, c.Seq, opts)
	if err != nil {
		return c.unplaceable(be, err, largest, noFit)
	}
	h := tensor.HumanBytes
	recompute := ""
	if fp.Recompute {
		recompute = " (recompute)"
	}
	line := fmt.Sprintf("memory on %s: training at B=%d T=%d: parameters %s, gradients %s, AdamW %s, activations %s%s; total %s",
		be.Name(), fp.B, fp.T, h(fp.Params), h(fp.Grads), h(fp.Optimizer), h(fp.Activations), recompute, h(fp.Total()))
	return c.checkFootprint(be, line, fp.Total(), largest, noFit, log)
}

// checkFootprint logs line, a run's footprint of total bytes, with the memory available
// appended when known; with DryRun it prints the line instead and stops the run. A total
// over the budget is refused with the largest batch that fits (largest; 0 for none), or else
// with noFit's advice.
func (c Memory) checkFootprint(be tensor.Backend, line string, total int64, largest func(budget int64) int, noFit string, log zerolog.Logger) error {
	budget, source, known := tensor.Budget(be)
	if known {
		line += fmt.Sprintf(" of %s available (%s)", tensor.HumanBytes(int64(budget)), source)
	}
	if c.DryRun {
		fmt.Fprintln(c.Out, line)
		return ErrDryRun
	}
	log.Info().Msg(line)
	if !known || total <= int64(budget) {
		return nil
	}
	return fmt.Errorf("--batch %d --seq %d needs %s, and %s has %s available (%s): %s", c.Batch, c.Seq,
		tensor.HumanBytes(total), be.Name(), tensor.HumanBytes(int64(budget)), source, batchAdvice(largest(int64(budget)), noFit))
}

// unplaceable is err, a batch whose tensors cannot be laid out on the device (one larger than
// its largest allocation), with the largest batch that can and fits the memory available.
func (c Memory) unplaceable(be tensor.Backend, err error, largest func(budget int64) int, noFit string) error {
	budget := int64(math.MaxInt64)
	if b, _, known := tensor.Budget(be); known {
		budget = int64(b)
	}
	return fmt.Errorf("--batch %d --seq %d: %w: %s", c.Batch, c.Seq, err, batchAdvice(largest(budget), noFit))
}

// batchAdvice names the largest batch that fits (fit; 0 for none), or else says noFit.
func batchAdvice(fit int, noFit string) string {
	if fit > 0 {
		return fmt.Sprintf("--batch %d fits (with --micro-batches to keep the batch size)", fit)
	}
	return "no batch fits at this --seq: " + noFit
}

// largestLlamaBatch is the largest batch up to maxB whose training footprint fits budget, 0
// when none does.
func largestLlamaBatch(be tensor.Backend, c llama.Config, T, maxB int, opts llama.FootprintOptions, budget int64) int {
	return sort.Search(maxB, func(n int) bool {
		fp, err := llama.EstimateFootprintWith(be, c, n+1, T, opts)
		return err != nil || fp.Total() > budget
	})
}
