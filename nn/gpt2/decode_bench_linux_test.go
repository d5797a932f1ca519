package gpt2_test

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// threadCPU is the CPU time of the calling thread, which other processes on a shared machine
// barely disturb, unlike the wall clock.
func threadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Nano())
}

// BenchmarkGroupPrefill measures the prefill of a group of G completions of one long prompt on
// the CPU: once and forked to the group's other rows, against the prompt on every row in one
// step (what sampling a group does without forking) and row by row. The model is gpt2-mini with
// room for the prompt and 32 new tokens, on a one-worker backend so that the thread's CPU time
// (cpu-ms/op) counts all the work.
func BenchmarkGroupPrefill(b *testing.B) {
	const G, P, New = 8, 256, 32
	cfg, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxSeqLen = P + New
	m, err := gpt2.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		b.Fatal(err)
	}
	d, err := m.NewDecoder(G, P+New)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	r := rng.New(3)
	prompt := make([]int32, P)
	for i := range prompt {
		prompt[i] = int32(r.Intn(cfg.VocabSize))
	}
	every := make([]int32, 0, G*P)
	rest := make([]int, 0, G-1)
	for g := range G {
		every = append(every, prompt...)
		if g > 0 {
			rest = append(rest, g)
		}
	}
	run := func(b *testing.B, prefill func() error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		d.Reset()
		if err := prefill(); err != nil { // warm-up: the backend's scratch
			b.Fatal(err)
		}
		b.ResetTimer()
		t0 := threadCPU()
		for range b.N {
			d.Reset()
			if err := prefill(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((threadCPU()-t0)/1e6/float64(b.N), "cpu-ms/op")
	}
	b.Run("fork", func(b *testing.B) {
		run(b, func() error {
			if _, err := d.StepRows([]int{0}, prompt, P); err != nil {
				return err
			}
			return d.Fork(0, rest)
		})
	})
	b.Run("row-by-row", func(b *testing.B) {
		run(b, func() error {
			for g := range G {
				if _, err := d.StepRows([]int{g}, prompt, P); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("separate", func(b *testing.B) {
		run(b, func() error {
			_, err := d.Step(every, P)
			return err
		})
	})
}
