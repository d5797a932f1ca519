package backendtest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// recorder is a testing.TB that records failures; Fatal ends the goroutine, as testing's does.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *recorder) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.record(fmt.Sprintf("%v", args...))
	runtime.Goexit()
}

// failures runs f against a recorder on its own goroutine and returns what it reported.
func failures(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failures
}

// wantFailure fails t unless f reports a failure containing want.
func wantFailure(t *testing.T, what, want string, f func(tb testing.TB)) {
	t.Helper()
	got := failures(t, f)
	for _, msg := range got {
		if strings.Contains(msg, want) {
			return
		}
	}
	t.Errorf("%s: failures %q, want one containing %q", what, got, want)
}

// wantPass fails t if f reports anything.
func wantPass(t *testing.T, what string, f func(tb testing.TB)) {
	t.Helper()
	if got := failures(t, f); len(got) > 0 {
		t.Errorf("%s: unexpected failures %q", what, got)
	}
}

func TestCompare(t *testing.T) {
	want := []float32{1, -2, 0}
	wantPass(t, "within the bound", func(tb testing.TB) {
		Compare(tb, "x", Check{Atol: 1e-3, Rtol: 1e-3}, []float32{1.0019, -2.0029, 0.0009}, want)
	})
	wantFailure(t, "past the bound", "x[1]: got -2.0031, reference -2", func(tb testing.TB) {
		Compare(tb, "x", Check{Atol: 1e-3, Rtol: 1e-3}, []float32{1, -2.0031, 0}, want)
	})
	negZero := float32(0)
	negZero = -negZero
	wantFailure(t, "bitwise, a zero's sign", "x[2]: got -0, reference 0 (want the same bits)", func(tb testing.TB) {
		Compare(tb, "x", Check{}, []float32{1, -2, negZero}, want)
	})
	wantFailure(t, "NaN", "x[0]: got NaN", func(tb testing.TB) {
		nan := float32(0)
		nan /= nan
		Compare(tb, "x", Check{Atol: 1, Rtol: 1}, []float32{nan, -2, 0}, want)
	})
	wantFailure(t, "lengths", "x: 2 values, want 3", func(tb testing.TB) {
		Compare(tb, "x", Check{}, []float32{1, -2}, want)
	})
}

// faulty is the CPU backend with one bug, to show the suite catches it.
type faulty struct {
	*cpu.Backend
	fault string
}

// MatMul drops the bias under the fault "no bias", and GeluOut under "no gelu".
func (b *faulty) MatMul(out, a, m, bias *tensor.Tensor, p tensor.MatMulParams) {
	switch b.fault {
	case "no bias":
		bias = nil
	case "no gelu":
		p.GeluOut = nil
	}
	b.Backend.MatMul(out, a, m, bias, p)
}

// GeluForward writes one element past out under the fault "spill".
func (b *faulty) GeluForward(out, inp *tensor.Tensor) {
	b.Backend.GeluForward(out, inp)
	if b.fault == "spill" {
		b.Backend.Fill(&tensor.Tensor{Storage: out.Storage, Offset: out.Offset + out.Numel(), Shape: tensor.Shape{1}}, 0)
	}
}

// GeluBackward overwrites dinp instead of accumulating under the fault "overwrite".
func (b *faulty) GeluBackward(dinp, inp, dout *tensor.Tensor) {
	if b.fault == "overwrite" {
		b.Backend.Fill(dinp, 0)
	}
	b.Backend.GeluBackward(dinp, inp, dout)
}

// SwiGLUForward returns the product of the gate and up, without the SiLU, under "no silu".
func (b *faulty) SwiGLUForward(out, gate, up *tensor.Tensor, n int) {
	if b.fault == "no silu" {
		b.Backend.Mul(out, gate, up)
		return
	}
	b.Backend.SwiGLUForward(out, gate, up, n)
}

// caseNamed returns the case of cases with the given name.
func caseNamed(t *testing.T, cases []Case, name string) Case {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return Case{}
}

// runAgainstReference runs c on b and on the reference and compares the outputs as RunCases
// does.
func runAgainstReference(tb testing.TB, c Case, b tensor.Backend) {
	tb.Helper()
	ref := cpu.New()
	want := c.RunOn(tb, ref)
	got := c.RunOn(tb, b)
	for _, ch := range c.Checks {
		Compare(tb, ch.Name, ch, got[ch.Name], want[ch.Name])
	}
}

// TestCasesCatchFaults: a correct backend passes a case and the same backend with a bug
// fails it, with a message naming the output.
func TestCasesCatchFaults(t *testing.T) {
	nn, llama := NNCases(), LlamaCases()
	for _, f := range []struct {
		fault, name, want string
		cases             []Case
	}{
		{"spill", "GeluForward/n=1000", "element 1003 outside the view of out (1000 elements at 3) changed to 0", nn},
		{"overwrite", "GeluBackward/n=4099", "dinp[", nn},
		{"no silu", "SwiGLUForward/n=165", "out[", llama},
	} {
		c := caseNamed(t, f.cases, f.name)
		wantPass(t, f.name+" on the CPU", func(tb testing.TB) { runAgainstReference(tb, c, cpu.NewWithThreads(1)) })
		wantFailure(t, f.name+" with the fault "+f.fault, f.want, func(tb testing.TB) {
			runAgainstReference(tb, c, &faulty{Backend: cpu.NewWithThreads(1), fault: f.fault})
		})
	}
}

// TestCheckMatMulCatchesAMissingBias: the bound passes the CPU at another thread count and
// fails a product that leaves out the bias.
func TestCheckMatMulCatchesAMissingBias(t *testing.T) {
	c := MatMulCase{M: 7, N: 5, K: 97, Batch: 3, TransB: true, Bias: true}
	wantPass(t, "the CPU", func(tb testing.TB) { CheckMatMul(tb, cpu.NewWithThreads(1), cpu.New(), c, 1) })
	wantFailure(t, "no bias", "M7_N5_K97_b3_tafalse_tbtrue_biastrue_accfalse: out[0,0,0]", func(tb testing.TB) {
		CheckMatMul(tb, &faulty{Backend: cpu.New(), fault: "no bias"}, cpu.New(), c, 1)
	})
}

// TestCaseTables: every case has a unique name, a window, and checks and inputs that name
// its arguments; the tables hold every case (a case removed by mistake changes the count).
func TestCaseTables(t *testing.T) {
	for _, table := range []struct {
		name  string
		cases []Case
		count int
	}{{"NNCases", NNCases(), 95}, {"LlamaCases", LlamaCases(), 38}} {
		if len(table.cases) != table.count {
			t.Errorf("%s: %d cases, want %d", table.name, len(table.cases), table.count)
		}
		seen := map[string]bool{}
		for _, c := range table.cases {
			if seen[c.Name] {
				t.Errorf("%s: two cases named %s", table.name, c.Name)
			}
			seen[c.Name] = true
			if c.Window <= 0 || len(c.Checks) == 0 || c.Run == nil {
				t.Errorf("%s %s: window %d, %d checks, run set %v", table.name, c.Name, c.Window, len(c.Checks), c.Run != nil)
			}
			for _, ch := range c.Checks {
				if c.F[ch.Name] == nil {
					t.Errorf("%s %s: check of %s, which is not among its tensors", table.name, c.Name, ch.Name)
				}
			}
		}
	}
	if n := len(MatMulCases()); n != 4*3*3*4+len(MatMulFlagCombos) {
		t.Errorf("MatMulCases: %d cases, want %d", n, 4*3*3*4+len(MatMulFlagCombos))
	}
}

// TestCheckMatMulGeluCatchesAnIgnoredGeluOut: the CPU passes, and a product that leaves
// GeluOut unwritten fails.
func TestCheckMatMulGeluCatchesAnIgnoredGeluOut(t *testing.T) {
	c := MatMulGeluCases()[1]
	wantPass(t, "the CPU", func(tb testing.TB) { CheckMatMulGelu(tb, cpu.New(), c, 1, "") })
	wantFailure(t, "no gelu", "M33_N130_K97_b0_tafalse_tbtrue_biastrue_accfalse: gelu[0]", func(tb testing.TB) {
		CheckMatMulGelu(tb, &faulty{Backend: cpu.New(), fault: "no gelu"}, c, 1, "")
	})
}
