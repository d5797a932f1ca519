package backendtest

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// Case is one op (or a short sequence of ops) run on the backend under test and on the
// reference with the same inputs. Backward ops run twice, so that results show they
// accumulate.
type Case struct {
	// Name is the op, a slash, and the case's dimensions: "LayerNormForward/N=5,C=64".
	Name string
	// F holds the float32 inputs, and the initial values of the outputs, by argument name.
	F map[string][]float32
	// I holds the int32 inputs (tokens, targets).
	I map[string][]int32
	// Run runs the op on b; x holds a tensor for each name of F and I, and names absent from
	// both are nil (an optional argument left out).
	Run func(b tensor.Backend, x map[string]*tensor.Tensor)
	// Checks are the outputs compared with the reference, with their bounds.
	Checks []Check
	// Post checks the backend's results further (untouched padding, exact masks), given the
	// outputs of Checks and of Keep by name.
	Post func(t *testing.T, got map[string][]float32)
	// Keep names outputs that are downloaded for Post but not compared with the reference.
	Keep []string
	// Window is a length, in elements, that splits the case's larger tensors into several
	// pieces (see Variant.New).
	Window int
	// Dims are the dimensions by name of the cases whose state a backend keeps in its own
	// layout, for the checks it adds of its own: B, T, C and NH of the attention cases.
	Dims map[string]int
}

const (
	guardLo = 3 // sentinels before and after each view
	guardHi = 5
)

// Sentinel is the value PlaceGuarded fills a view's surroundings with: an op that writes past
// its view changes it.
const Sentinel = float32(-1234.5)

// PlaceGuarded uploads data to b into a view a few elements into a buffer filled with
// Sentinel, and returns the view and the whole buffer. The caller frees the buffer's storage.
func PlaceGuarded(t testing.TB, b tensor.Backend, data []float32) (view, full *tensor.Tensor) {
	t.Helper()
	n := len(data)
	full, err := tensor.New(b, tensor.Float32, guardLo+n+guardHi)
	if err != nil {
		t.Fatal(err)
	}
	b.Fill(full, Sentinel)
	view = full.View(guardLo, n)
	if err := b.Upload(view, data); err != nil {
		t.Fatal(err)
	}
	return view, full
}

// PlaceInt32 uploads data to b into a view a few elements into a larger buffer, as
// PlaceGuarded places float32 data. The caller frees the view's storage.
func PlaceInt32(t testing.TB, b tensor.Backend, data []int32) *tensor.Tensor {
	t.Helper()
	full, err := tensor.New(b, tensor.Int32, guardLo+len(data)+guardHi)
	if err != nil {
		t.Fatal(err)
	}
	v := full.View(guardLo, len(data))
	if err := b.UploadInt32(v, data); err != nil {
		t.Fatal(err)
	}
	return v
}

// RunOn runs c on b, every tensor a view among sentinels, and returns the outputs of Checks
// and Keep by name. It fails t when the op changed an element outside its views.
func (c Case) RunOn(t testing.TB, b tensor.Backend) map[string][]float32 {
	t.Helper()
	x := map[string]*tensor.Tensor{}
	fulls := map[string]*tensor.Tensor{}
	for name, data := range c.F {
		x[name], fulls[name] = PlaceGuarded(t, b, data)
	}
	for name, data := range c.I {
		x[name] = PlaceInt32(t, b, data)
	}
	c.Run(b, x)
	got := map[string][]float32{}
	for _, ch := range c.Checks {
		got[ch.Name] = download(t, b, x[ch.Name])
	}
	for _, name := range c.Keep {
		got[name] = download(t, b, x[name])
	}
	for name, full := range fulls {
		all := download(t, b, full)
		n := len(c.F[name])
		for i, v := range all {
			if (i < guardLo || i >= guardLo+n) && v != Sentinel {
				t.Fatalf("%s: element %d outside the view of %s (%d elements at %d) changed to %g", c.Name, i, name, n, guardLo, v)
			}
		}
	}
	all := make([]*tensor.Tensor, 0, len(x))
	for _, v := range x {
		all = append(all, v)
	}
	freeAll(b, all...)
	return got
}

// RunCases runs each case as a subtest on the reference and on the backend newBackend opens,
// and compares: within the case's bounds, then bitwise against a second run on the same
// backend, then within the bounds on each variant. Post runs on the results of the backend
// and of each variant.
func RunCases(t *testing.T, newBackend func(t *testing.T) tensor.Backend, cases []Case, opts Options) {
	b := newBackend(t)
	defer closeBackend(t, b)
	ref := newReference()
	defer closeBackend(t, ref)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := c.RunOn(t, ref)
			got := c.RunOn(t, b)
			c.compare(t, "", opts, got, want)
			if c.Post != nil {
				c.Post(t, got)
			}
			again := c.RunOn(t, b)
			for _, ch := range c.Checks {
				Compare(t, ch.Name+" (repeated)", Check{Name: ch.Name}, again[ch.Name], got[ch.Name])
			}
			for _, v := range opts.Variants {
				vb := v.New(t, c.Window)
				res := c.RunOn(t, vb)
				closeBackend(t, vb)
				c.compare(t, fmt.Sprintf(" (%s)", v.Name), opts, res, want)
				if c.Post != nil {
					c.Post(t, res)
				}
			}
		})
	}
}

// compare checks every output of c against the reference's.
func (c Case) compare(t *testing.T, suffix string, opts Options, got, want map[string][]float32) {
	t.Helper()
	for _, ch := range c.Checks {
		Compare(t, ch.Name+suffix, opts.bound(ch), got[ch.Name], want[ch.Name])
	}
}

// referenceOutput runs run on a fresh reference backend over host data and returns the named
// output: inputs of later cases that a forward computes (saved means, probabilities).
func referenceOutput(f map[string][]float32, i map[string][]int32, out string, run func(b tensor.Backend, x map[string]*tensor.Tensor)) []float32 {
	b := newReference()
	defer b.Close()
	x := map[string]*tensor.Tensor{}
	for name, data := range f {
		x[name] = must(tensor.FromSlice(b, data, len(data)))
	}
	for name, data := range i {
		x[name] = must(tensor.FromInt32(b, data, len(data)))
	}
	run(b, x)
	return must(tensor.ToHost(x[out]))
}

// must returns v, panicking on err: for the reference backend's host memory, which does not fail
// short of a programming error in the cases.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// untouchedColumns checks that columns V..Vp-1 of the (N, Vp) result kept their initial values.
func untouchedColumns(name string, init []float32, N, V, Vp int) func(t *testing.T, got map[string][]float32) {
	return func(t *testing.T, got map[string][]float32) {
		t.Helper()
		for r := 0; r < N; r++ {
			for v := V; v < Vp; v++ {
				if g, w := got[name][r*Vp+v], init[r*Vp+v]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%s[%d, %d] (padding) changed from %g to %g", name, r, v, w, g)
				}
			}
		}
	}
}
