package sample

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// processCPU is the CPU time of this process in seconds: the decoder's and the pickers'
// goroutines, which other processes on a shared machine barely disturb, unlike the wall clock.
func processCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}

// benchModel is gpt2-mini with room for a prompt of P tokens and maxNew new ones, on a
// one-worker backend.
func benchModel(b *testing.B, P, maxNew int) *gpt2.Model {
	cfg, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxSeqLen = P + maxNew
	m, err := gpt2.New(cpu.NewWithThreads(1), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		b.Fatal(err)
	}
	return m
}

// benchRequests is groups of size requests, each group with its own random prompt of P tokens,
// every request with its own stream and a cap of new tokens from caps (nil: none).
func benchRequests(groups, size, P, vocab int, caps []int) []Request {
	r := rng.New(3)
	var reqs []Request
	for g := range groups {
		p := make([]int32, P)
		for i := range p {
			p[i] = int32(r.Intn(vocab))
		}
		for k := range size {
			q := Request{Prompt: p, Group: g, RNG: rng.Keyed(1, uint64(g), uint64(k))}
			if caps != nil {
				q.MaxNew = caps[len(reqs)]
			}
			reqs = append(reqs, q)
		}
	}
	return reqs
}

// runBatch times GenerateBatch b.N times in process CPU time and reports cpu-ms/op and the
// sampled tokens per CPU second.
func runBatch(b *testing.B, d RowDecoder, reqs func() []Request, cfg BatchConfig) {
	if _, _, err := GenerateBatch(d, reqs(), cfg); err != nil { // warm-up: the backend's scratch
		b.Fatal(err)
	}
	b.ResetTimer()
	t0 := processCPU()
	var tokens, steps, busy, slotSteps int
	for range b.N {
		res, st, err := GenerateBatch(d, reqs(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range res.Tokens {
			tokens += len(t)
		}
		steps += st.Steps
		busy += st.Decoded + st.Prefills
		slotSteps += st.SlotSteps
	}
	cpu := processCPU() - t0
	b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(tokens)/cpu, "tokens/cpu-s")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	b.ReportMetric(float64(busy)/float64(slotSteps), "occupancy")
}

// BenchmarkBatchGroupPrefill: a GRPO group of 16 completions of one 256-token prompt on 16
// slots, up to each one's first token: the prompt prefilled once and forked, against 16
// separate prompts (each request its own group).
func BenchmarkBatchGroupPrefill(b *testing.B) {
	const G, P = 16, 256
	m := benchModel(b, P, 8)
	d, err := m.NewDecoder(G, P+8)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	cfg := BatchConfig{MaxNew: 1, EOS: -1, Sampling: Options{Temperature: 1, TopP: 1}}
	b.Run("fork", func(b *testing.B) {
		runBatch(b, d, func() []Request { return benchRequests(1, G, P, m.Config.VocabSize, nil) }, cfg)
	})
	b.Run("separate", func(b *testing.B) {
		runBatch(b, d, func() []Request {
			reqs := benchRequests(1, G, P, m.Config.VocabSize, nil)
			for i := range reqs {
				reqs[i].Group = i
			}
			return reqs
		}, cfg)
	})
}

// BenchmarkBatchRagged: a GRPO step of 4 groups of 8 completions of 256-token prompts on 8
// slots, completion lengths spread over 4..64 tokens: static batching (a batch waits for its
// longest row) against continuous batching (a finished row's slot goes to the next request).
// The generations are the same; tokens/cpu-s compares the throughput.
func BenchmarkBatchRagged(b *testing.B) {
	const groups, size, P, maxNew = 4, 8, 256, 64
	m := benchModel(b, P, maxNew)
	d, err := m.NewDecoder(size, P+maxNew)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	r := rng.New(8)
	caps := make([]int, groups*size)
	for i := range caps {
		caps[i] = 4 + r.Intn(maxNew-4+1)
	}
	reqs := func() []Request { return benchRequests(groups, size, P, m.Config.VocabSize, caps) }
	for _, static := range []bool{true, false} {
		name := "continuous"
		if static {
			name = "static"
		}
		b.Run(name, func(b *testing.B) {
			runBatch(b, d, reqs, BatchConfig{MaxNew: maxNew, EOS: -1, Sampling: Options{Temperature: 1, TopP: 1}, Static: static})
		})
	}
}
