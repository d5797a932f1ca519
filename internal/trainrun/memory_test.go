package trainrun

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// budgeted is a CPU backend with a fixed memory budget, so the messages do not depend on the
// machine's free memory.
type budgeted struct {
	tensor.Backend
	n uint64
}

func (b budgeted) MemoryBudget() (uint64, string) { return b.n, "a test budget" }

func gpt2Mini(t *testing.T) gpt2.Config {
	t.Helper()
	cfg, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func llamaTiny(t *testing.T, be tensor.Backend) *llama.Model {
	t.Helper()
	c, err := llama.Preset("llama-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := llama.New(be, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// With DryRun the footprint line goes to Out alone, host gradient copies and the budget
// included, and the check stops the run with ErrDryRun.
func TestMemoryDryRun(t *testing.T) {
	be := budgeted{cpu.New(), 1 << 30}
	var out bytes.Buffer
	c := Memory{Batch: 4, Seq: 64, MicroBatches: 2, DryRun: true, Out: &out}
	if err := c.CheckGPT2(be, gpt2Mini(t), zerolog.Nop()); !errors.Is(err, ErrDryRun) {
		t.Fatalf("GPT-2 dry run: %v", err)
	}
	want := "memory on cpu: training at B=4 T=64: parameters 27.7 MiB, gradients 27.7 MiB, AdamW 55.3 MiB, activations 112.0 MiB; " +
		"total 222.6 MiB; host gradient copies 83.0 MiB of 1.00 GiB available (a test budget)\n"
	if out.String() != want {
		t.Errorf("GPT-2 dry run printed\n%q, want\n%q", out.String(), want)
	}
	out.Reset()
	if err := c.CheckLlama(be, llamaTiny(t, be), zerolog.Nop()); !errors.Is(err, ErrDryRun) {
		t.Fatalf("Llama dry run: %v", err)
	}
	want = "memory on cpu: training at B=4 T=64: parameters 52.1 MiB, gradients 52.1 MiB, AdamW 104.2 MiB, activations 114.7 MiB; " +
		"total 323.1 MiB of 1.00 GiB available (a test budget)\n"
	if out.String() != want {
		t.Errorf("Llama dry run printed\n%q, want\n%q", out.String(), want)
	}
}

// A run that fits is logged, not printed; one that does not is refused with the largest batch
// that fits, or with advice when none does (--recompute only while it is off).
func TestMemoryRefusal(t *testing.T) {
	var logged, out bytes.Buffer
	log := zerolog.New(&logged)
	c := Memory{Batch: 4, Seq: 64, MicroBatches: 1, Out: &out}
	if err := c.CheckGPT2(budgeted{cpu.New(), 1 << 30}, gpt2Mini(t), log); err != nil {
		t.Fatalf("a run that fits: %v", err)
	}
	if want := `{"level":"info","message":"memory on cpu: training at B=4 T=64: parameters 27.7 MiB, gradients 27.7 MiB, AdamW 55.3 MiB, activations 112.0 MiB; total 222.6 MiB of 1.00 GiB available (a test budget)"}` + "\n"; logged.String() != want || out.Len() != 0 {
		t.Errorf("a run that fits logged\n%s and printed %q", logged.String(), out.String())
	}
	c.Batch = 64
	for _, tc := range []struct {
		name      string
		budget    uint64
		recompute bool
		llama     bool
		want      string
	}{
		{"gpt2 some batch fits", 400 << 20, false, false, "--batch 64 --seq 64 needs 1.12 GiB, and cpu has 400.0 MiB available (a test budget): --batch 10 fits (with --micro-batches to keep the batch size)"},
		{"gpt2 none fits", 20 << 20, false, false, "--batch 64 --seq 64 needs 1.12 GiB, and cpu has 20.0 MiB available (a test budget): no batch fits at this --seq: use --recompute, a shorter --seq or a smaller model"},
		{"llama none fits", 20 << 20, false, true, "--batch 64 --seq 64 needs 985.4 MiB, and cpu has 20.0 MiB available (a test budget): no batch fits at this --seq: use --recompute, a shorter --seq, LoRA or a smaller model"},
		{"llama recompute none fits", 1 << 20, true, true, "--batch 64 --seq 64 needs 955.4 MiB, and cpu has 1.0 MiB available (a test budget): no batch fits at this --seq: use a shorter --seq, LoRA or a smaller model"},
	} {
		c.Recompute = tc.recompute
		be := budgeted{cpu.New(), tc.budget}
		var err error
		if tc.llama {
			err = c.CheckLlama(be, llamaTiny(t, be), zerolog.Nop())
		} else {
			err = c.CheckGPT2(be, gpt2Mini(t), zerolog.Nop())
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want\n%s", tc.name, err, tc.want)
		}
	}
	// An unknown budget refuses nothing.
	if err := c.CheckGPT2(budgeted{cpu.New(), 0}, gpt2Mini(t), zerolog.Nop()); err != nil {
		t.Errorf("an unknown budget: %v", err)
	}
}
