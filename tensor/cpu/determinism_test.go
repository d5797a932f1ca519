package cpu

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/internal/race"
	"github.com/vkgrad/vkgrad/tensor"
)

// opBench holds inputs for every op at a size that spans several chunks of each kind of split.
type opBench struct {
	b                        *Backend
	B, T, C, NH, V, Vp, N, n int
	x, x2, out, mean, rstd   *tensor.Tensor
	w, bias, dw, db          *tensor.Tensor
	qkv, att, attOut, dqkv   *tensor.Tensor
	scratch, dout            *tensor.Tensor
	kc, vc, dec              *tensor.Tensor
	tokens, targets          *tensor.Tensor
	wte, wpe, dwte, dwpe     *tensor.Tensor
	logits, probs, losses    *tensor.Tensor
	dlogits, logp, ent       *tensor.Tensor
	p, g, m, v, sum, mask    *tensor.Tensor
	mm, mmW, mmOut, mmBias   *tensor.Tensor
	dinp, qkv1               *tensor.Tensor
	gate, up, ropeTable      *tensor.Tensor
	kvK, kvV                 *tensor.Tensor
	ops                      []namedOp
}

type namedOp struct {
	name string
	run  func()
	outs []*tensor.Tensor
}

func newOpBench(t testing.TB, b *Backend, B, T, C, NH, V, Vp int) *opBench {
	r := rand.New(rand.NewPCG(42, 43))
	o := &opBench{b: b, B: B, T: T, C: C, NH: NH, V: V, Vp: Vp, N: B * T, n: B * T * 4 * C}
	N, n := o.N, o.n
	f := func(k int, s float64) *tensor.Tensor { return mk(t, b, randn(r, k, s), k) }
	o.x, o.x2, o.out = f(n, 1), f(n, 1), f(n, 0)
	o.mean, o.rstd = f(N, 0), f(N, 0)
	o.w, o.bias, o.dw, o.db = f(C, 1), f(C, 1), f(C, 0), f(C, 0)
	o.qkv, o.att, o.attOut, o.dqkv = f(N*3*C, 1), f(B*NH*T*T, 0), f(N*C, 0), f(N*3*C, 0)
	o.scratch, o.dout = f(B*NH*T*T, 0), f(N*C, 1)
	o.kc, o.vc, o.dec = f(B*T*C, 0), f(B*T*C, 0), f(B*C, 0)
	o.tokens, o.targets = mkI(t, b, randTokens(r, N, V), N), mkI(t, b, randTokens(r, N, V), N)
	o.wte, o.wpe, o.dwte, o.dwpe = f(Vp*C, 1), f(T*C, 1), f(Vp*C, 0), f(T*C, 0)
	o.logits, o.probs, o.losses = f(N*Vp, 2), f(N*Vp, 0), f(N, 0)
	o.dlogits, o.logp, o.ent = f(N*Vp, 0), f(N, 0), f(N, 0)
	o.p, o.g, o.m, o.v, o.sum, o.mask = f(n, 1), f(n, 1), f(n, 0), f(n, 0), f(1, 0), f(n, 0)
	o.mm, o.mmW, o.mmOut = f(N*C, 1), f(3*C*C, 1), f(N*3*C, 0)
	o.mmBias, o.dinp, o.qkv1 = f(3*C, 1), o.out.View(0, N*C), o.qkv.View(0, B*3*C)
	// The Llama ops: heads of C/NH (RoPE), half of them KV heads (PackQKV), an MLP of 4C.
	D := C / NH
	o.gate, o.up, o.ropeTable = f(n, 2), f(n, 1), f(T*D, 1)
	o.kvK, o.kvV = f(N*C/2, 1), f(N*C/2, 1)
	o.ops = []namedOp{
		{"Add", func() { b.Add(o.out, o.x, o.x2) }, []*tensor.Tensor{o.out}},
		{"Axpy", func() { b.Axpy(o.out, 0.5, o.x) }, []*tensor.Tensor{o.out}},
		{"Sum", func() { b.Sum(o.sum, o.x) }, []*tensor.Tensor{o.sum}},
		{"SumSquares", func() { b.SumSquares(o.sum, o.x) }, []*tensor.Tensor{o.sum}},
		{"MatMul", func() {
			b.MatMul(o.mmOut, o.mm, o.mmW, o.mmBias, tensor.MatMulParams{M: N, N: 3 * C, K: C, TransB: true})
		}, []*tensor.Tensor{o.mmOut}},
		{"BiasBackward", func() { b.BiasBackward(o.db, o.dout, N, C) }, []*tensor.Tensor{o.db}},
		{"LayerNormForward", func() { b.LayerNormForward(o.attOut, o.mean, o.rstd, o.dout, o.w, o.bias, N, C) },
			[]*tensor.Tensor{o.attOut, o.mean, o.rstd}},
		{"LayerNormBackward", func() {
			b.LayerNormBackward(o.dinp, o.dw, o.db, o.dout, o.mm, o.w, o.mean, o.rstd, N, C)
		}, []*tensor.Tensor{o.out, o.dw, o.db}},
		{"GeluForward", func() { b.GeluForward(o.out, o.x) }, []*tensor.Tensor{o.out}},
		{"GeluBackward", func() { b.GeluBackward(o.out, o.x, o.x2) }, []*tensor.Tensor{o.out}},
		{"AttentionForward", func() { b.AttentionForward(o.attOut, o.att, o.qkv, B, T, C, NH) },
			[]*tensor.Tensor{o.attOut, o.att}},
		{"AttentionBackward", func() { b.AttentionBackward(o.dqkv, o.scratch, o.dout, o.qkv, o.attOut, o.att, B, T, C, NH) },
			[]*tensor.Tensor{o.dqkv, o.scratch}},
		{"AttentionDecode", func() {
			b.AttentionDecode(o.dec, o.kc, o.vc, o.qkv1, B, 1, T-1, T, C, NH)
		}, []*tensor.Tensor{o.dec, o.kc, o.vc}},
		{"EncoderForward", func() { b.EncoderForward(o.attOut, o.tokens, o.wte, o.wpe, B, T, C) }, []*tensor.Tensor{o.attOut}},
		{"EncoderBackward", func() { b.EncoderBackward(o.dwte, o.dwpe, o.dout, o.tokens, B, T, C) },
			[]*tensor.Tensor{o.dwte, o.dwpe}},
		{"CrossEntropyForward", func() { b.CrossEntropyForward(o.losses, o.probs, o.logits, o.targets, N, V, Vp) },
			[]*tensor.Tensor{o.losses, o.probs}},
		{"CrossEntropyBackward", func() { b.CrossEntropyBackward(o.dlogits, o.probs, o.targets, o.losses, N, V, Vp) },
			[]*tensor.Tensor{o.dlogits}},
		{"LogSoftmaxGather", func() { b.LogSoftmaxGather(o.logp, o.ent, o.logits, o.targets, nil, N, V, Vp, 0.8) },
			[]*tensor.Tensor{o.logp, o.ent}},
		{"LogSoftmaxGatherBackward", func() {
			b.LogSoftmaxGatherBackward(o.dlogits, o.logits, o.targets, nil, o.logp, o.ent, N, V, Vp, 0.8)
		}, []*tensor.Tensor{o.dlogits}},
		{"Dropout", func() { b.Dropout(o.out, o.mask, o.x, 0.1, 7) }, []*tensor.Tensor{o.out, o.mask}},
		{"RMSNormForward", func() { b.RMSNormForward(o.attOut, o.rstd, o.dout, o.w, N, C, 1e-6) },
			[]*tensor.Tensor{o.attOut, o.rstd}},
		{"RMSNormBackward", func() { b.RMSNormBackward(o.dinp, o.dw, o.dout, o.mm, o.w, o.rstd, N, C) },
			[]*tensor.Tensor{o.out, o.dw}},
		{"RoPEForward", func() { b.RoPEForward(o.attOut, o.mm, o.ropeTable, N, T, 0, NH, NH-1, C) },
			[]*tensor.Tensor{o.attOut}},
		{"RoPEBackward", func() { b.RoPEBackward(o.dinp, o.dout, o.ropeTable, N, T, 0, NH, NH-1, C) },
			[]*tensor.Tensor{o.out}},
		{"SwiGLUForward", func() { b.SwiGLUForward(o.out, o.gate, o.up, n) }, []*tensor.Tensor{o.out}},
		{"SwiGLUBackward", func() { b.SwiGLUBackward(o.x, o.x2, o.gate, o.up, o.p, n) },
			[]*tensor.Tensor{o.x, o.x2}},
		{"PackQKV", func() { b.PackQKV(o.qkv, o.mm, o.kvK, o.kvV, N, NH, NH/2, D) }, []*tensor.Tensor{o.qkv}},
		{"PackQKVBackward", func() { b.PackQKVBackward(o.mm, o.kvK, o.kvV, o.dqkv, N, NH, NH/2, D) },
			[]*tensor.Tensor{o.mm, o.kvK, o.kvV}},
		{"EmbeddingForward", func() { b.EmbeddingForward(o.attOut, o.tokens, o.wte, N, C) }, []*tensor.Tensor{o.attOut}},
		{"EmbeddingBackward", func() { b.EmbeddingBackward(o.dwte, o.dout, o.tokens, N, C) }, []*tensor.Tensor{o.dwte}},
		{"AdamW", func() {
			b.AdamW(o.p, o.g, o.m, o.v, tensor.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
				WeightDecay: 0.01, Step: 1, GradSumSq: o.sum, MaxNorm: 1})
		}, []*tensor.Tensor{o.p, o.m, o.v}},
	}
	return o
}

// snapshot runs every op in sequence (later ops consume earlier results) and records outputs.
func (o *opBench) snapshot() map[string][]float32 {
	res := map[string][]float32{}
	for _, op := range o.ops {
		op.run()
		for i, t := range op.outs {
			res[fmt.Sprint(op.name, i)] = clone(Float32s(t))
		}
	}
	return res
}

// detShape spans several row chunks, column chunks, elementwise chunks and attention tasks.
func detBench(t testing.TB, threads int) *opBench {
	return newOpBench(t, NewWithThreads(threads), 2, 64, 96, 4, 601, 640)
}

func TestDeterminism(t *testing.T) {
	ref := detBench(t, 1)
	defer ref.b.Close()
	want := ref.snapshot()
	for _, threads := range []int{1, 2, 5} {
		o := detBench(t, threads)
		for run := 0; run < 2; run++ {
			got := o.snapshot()
			for k, w := range want {
				if !bitsEqual(got[k], w) {
					t.Errorf("%d threads, run %d: %s differs from the 1-thread result", threads, run, k)
				}
			}
			// Reset inputs that ops update in place, so the second run repeats the first.
			o.b.Close()
			o = detBench(t, threads)
		}
		o.b.Close()
	}
}

// TestZeroAllocs checks that ops allocate nothing per call once warm.
func TestZeroAllocs(t *testing.T) {
	o := newOpBench(t, NewWithThreads(4), 2, 64, 96, 4, 601, 640)
	defer o.b.Close()
	for _, op := range o.ops {
		op.run()
		if op.name == "MatMul" && race.Enabled {
			continue // package gemm allocates under the race detector's instrumentation
		}
		if a := testing.AllocsPerRun(5, op.run); a != 0 {
			t.Errorf("%s: %.1f allocations per call", op.name, a)
		}
	}
}

// TestConcurrentUse runs ops from several goroutines on one backend (run under -race).
func TestConcurrentUse(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	var wg sync.WaitGroup
	res := make([][]float32, 4)
	for g := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(1, 1))
			n := 3*ewChunk + 1
			x := mk(t, b, randn(r, n, 1), n)
			out := mk(t, b, make([]float32, n), n)
			for range 3 {
				b.GeluForward(out, x)
				b.Scale(out, 0.5)
			}
			res[g] = Float32s(out)
		}()
	}
	wg.Wait()
	for g := 1; g < len(res); g++ {
		if !bitsEqual(res[g], res[0]) {
			t.Fatalf("goroutine %d got a different result", g)
		}
	}
}
