// Package backendtest is a conformance suite that checks a tensor.Backend against tensor/cpu.
//
// A new backend (Metal, WebGPU, CUDA) calls Run from a test in its own package with a function
// that opens it. Every op of tensor.Kernels then runs as a subtest on the same inputs as on
// the reference, the CPU backend, and the results must agree within each op's tolerance: the
// bounds an independent float32 implementation meets (another summation order, a fused
// multiply-add, an exponential accurate to a few ulps), tight enough that a wrong index or a
// missing term fails. Each result must also be bitwise repeatable, and every output lives in
// a view among sentinel values that must survive. Variants run the same cases on other
// configurations of the backend, such as limits that force a device backend to split the
// work into windows.
//
// The suites are also exported one by one (RunCases with NNCases or LlamaCases,
// RunElementwise, RunMatMul, RunMatMulGelu, RunBiasBackward, RunAdamW), as are their
// building blocks (Case.RunOn, CheckMatMul, MatMulCase.TermSums, CheckMatMulGelu, MatMulGelu,
// Compare) and the inputs they draw and place (Normals, Tokens, OnBackend, PlaceGuarded,
// PlaceInt32), for a backend's own tests of its kernel variants.
package backendtest

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// Options configure the suites.
type Options struct {
	// Bitwise requires the backend's results to have the reference's bits, instead of agreeing
	// within each op's tolerance: for an implementation that promises the reference's
	// arithmetic, such as the CPU backend at another thread count.
	Bitwise bool
	// Variants are further configurations of the backend under test; every case also runs on
	// each and is compared with the same reference results.
	Variants []Variant
}

// Variant is one further configuration of the backend under test.
type Variant struct {
	// Name labels the variant's results in failure messages.
	Name string
	// New opens the variant for one case of RunCases, or for the whole of another suite.
	// window is a length, in elements, that splits the case's larger tensors into several
	// pieces (1000 for the other suites), for backends that bound how much of a buffer one
	// dispatch may address; other backends ignore it. The suite closes what New returns.
	New func(t *testing.T, window int) tensor.Backend
}

// Run runs every suite on the backend newBackend opens, each as a subtest: Elementwise,
// NN (the fused ops of GPT-2), Llama (the ops of the Llama family), MatMul, MatMulGelu,
// BiasBackward and AdamW. newBackend is called once per suite, and the suite closes what it returns.
func Run(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	t.Run("Elementwise", func(t *testing.T) { RunElementwise(t, newBackend, opts) })
	t.Run("NN", func(t *testing.T) { RunCases(t, newBackend, NNCases(), opts) })
	t.Run("Llama", func(t *testing.T) { RunCases(t, newBackend, LlamaCases(), opts) })
	t.Run("MatMul", func(t *testing.T) { RunMatMul(t, newBackend, opts) })
	t.Run("MatMulGelu", func(t *testing.T) { RunMatMulGelu(t, newBackend, opts) })
	t.Run("BiasBackward", func(t *testing.T) { RunBiasBackward(t, newBackend, opts) })
	t.Run("AdamW", func(t *testing.T) { RunAdamW(t, newBackend, opts) })
}

// Check bounds the difference of one output from the reference's:
// |got - want| <= Atol + Rtol·|want| elementwise; both zero asks for the same bits.
type Check struct {
	Name       string
	Atol, Rtol float64
}

// bound returns ch, or a bitwise check when opts asks for the reference's bits.
func (o Options) bound(ch Check) Check {
	if o.Bitwise {
		return Check{Name: ch.Name}
	}
	return ch
}

// Compare fails t when got and want differ in length or differ beyond ch's bound; what names
// the output in the message.
func Compare(t testing.TB, what string, ch Check, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		checkValue(t, what, i, got[i], want[i], ch.Atol+ch.Rtol*math.Abs(float64(want[i])), ch.Atol == 0 && ch.Rtol == 0)
	}
}

// checkValue fails t when element i of an output, got, differs from the reference's, want, by
// more than bound, or when bitwise and the bits differ.
func checkValue(t testing.TB, what string, i int, got, want float32, bound float64, bitwise bool) {
	t.Helper()
	if bitwise {
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%s[%d]: got %g, reference %g (want the same bits)", what, i, got, want)
		}
		return
	}
	if d := math.Abs(float64(got) - float64(want)); !(d <= bound) {
		t.Fatalf("%s[%d]: got %g, reference %g (|diff| %.3g > %.3g)", what, i, got, want, d, bound)
	}
}

// newReference returns the backend results are compared with.
func newReference() tensor.Backend { return cpu.New() }

// labelled is a backend under test with the suffix that labels its results in failure
// messages: empty for the backend newBackend opens, " (name)" for a variant.
type labelled struct {
	suffix string
	b      tensor.Backend
}

// underTest opens the backend newBackend returns, each variant of opts (with windows of 1000
// elements) and the reference, and returns them with a function that closes them all.
func underTest(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) (backends []labelled, ref tensor.Backend, closeAll func()) {
	t.Helper()
	backends = []labelled{{"", newBackend(t)}}
	for _, v := range opts.Variants {
		backends = append(backends, labelled{" (" + v.Name + ")", v.New(t, 1000)})
	}
	ref = newReference()
	return backends, ref, func() {
		for _, l := range backends {
			closeBackend(t, l.b)
		}
		closeBackend(t, ref)
	}
}

// closeBackend waits for b's queued work and closes it, failing t on either error.
func closeBackend(t testing.TB, b tensor.Backend) {
	t.Helper()
	if err := b.Sync(); err != nil {
		t.Errorf("%s: Sync: %v", b.Name(), err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("%s: Close: %v", b.Name(), err)
	}
}

// OnBackend uploads host into a view that starts off elements into a larger tensor on b (with
// room after it), so that ops see views at unaligned offsets. The caller frees the view's
// storage.
func OnBackend(t testing.TB, b tensor.Backend, host []float32, off int) *tensor.Tensor {
	t.Helper()
	full, err := tensor.New(b, tensor.Float32, off+len(host)+5)
	if err != nil {
		t.Fatal(err)
	}
	v := full.View(off, len(host))
	if err := b.Upload(v, host); err != nil {
		t.Fatal(err)
	}
	return v
}

// download copies x to the host.
func download(t testing.TB, b tensor.Backend, x *tensor.Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Numel())
	if err := b.Download(out, x); err != nil {
		t.Fatal(err)
	}
	return out
}

// freeAll releases the storage of every tensor given (nil ones skipped), each storage once.
func freeAll(b tensor.Backend, xs ...*tensor.Tensor) {
	seen := map[tensor.Storage]bool{}
	for _, x := range xs {
		if x != nil && !seen[x.Storage] {
			seen[x.Storage] = true
			b.Free(x.Storage)
		}
	}
}
