package autograd

import (
	"errors"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
)

// GradCheckOptions tune CheckGradients. Zero fields take the defaults below, which suit float32
// kernels on inputs of order 1.
//
// Why these defaults: a central difference has truncation error ~ Eps²·|d³L/dx³|/6 and rounding
// error ~ u·|L|/Eps, where u ≈ 6e-8 is float32's unit roundoff of the forward's outputs. Their
// sum is smallest near Eps = u^(1/3) ≈ 4e-3; 1e-2 keeps the rounding part (which grows with the
// number of outputs an element touches) near 1e-5 at a truncation cost of ~2e-5·|d³L/dx³|. What
// remains is of order 1e-4 for gradients of order 1, so AbsTol 1e-3 and RelTol 1e-2 still catch a
// wrong factor, sign, index or missing term, which show up as errors of order the gradient itself.
type GradCheckOptions struct {
	// Eps is the perturbation of one input element (default 1e-2). The step actually taken is
	// measured after rounding x±Eps to float32.
	Eps float64
	// AbsTol and RelTol: an element passes when |analytic - numeric| <= AbsTol + RelTol·|numeric|
	// (defaults 1e-3 and 1e-2).
	AbsTol, RelTol float64
	// MaxElements bounds the elements checked per input (default 64): inputs with at most that
	// many are checked whole, larger ones at a deterministic sample that includes the first and
	// last element.
	MaxElements int
	// Seed draws the output weights w and the element sample (0 is a valid seed).
	Seed uint64
	// Names label the inputs in errors (optional).
	Names []string
}

// GradCheckResult is the outcome for one input.
type GradCheckResult struct {
	Name    string
	Checked int // elements compared
	// MaxAbsErr is max |analytic - numeric|; MaxRelErr is max |analytic - numeric| /
	// max(|analytic|, |numeric|, AbsTol), the floor keeping near-zero gradients from dominating.
	MaxAbsErr, MaxRelErr float64
	// Worst is the element closest to failing (largest error over its allowance), with its values.
	Worst             int
	Analytic, Numeric float64
	Pass              bool
}

func (r GradCheckResult) String() string {
	return fmt.Sprintf("%s: %d elements, max abs err %.3g, max rel err %.3g, worst [%d] analytic %.8g numeric %.8g",
		r.Name, r.Checked, r.MaxAbsErr, r.MaxRelErr, r.Worst, r.Analytic, r.Numeric)
}

// ErrGradientMismatch is wrapped by the error CheckGradients returns when an element fails.
var ErrGradientMismatch = errors.New("analytic and numeric gradients differ")

// CheckGradients compares the gradients the tape computes with central finite differences.
//
// It zeroes every input's Grad, calls forward with a recording tape, seeds the returned output's
// Grad with a fixed random vector w in [-1, 1] and runs Backward, so each input's Grad holds
// dL/dinput for L = sum(out·w); the inputs keep these gradients afterwards. It then perturbs input
// elements one at a time and re-runs forward(nil), accumulating L in float64.
//
// forward must rebuild the same computation every call from the inputs' current values, and
// when it records, the gradients of its intermediate values must start at zero (allocate them
// inside forward, or zero them there). Every input needs a Grad and so does the output.
//
// The error is non-nil on misuse, or wraps ErrGradientMismatch when an element fails; the
// results are returned in both cases where they were computed.
func CheckGradients(forward func(tp *Tape) *Var, inputs []*Var, opts GradCheckOptions) ([]GradCheckResult, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := zeroInputGrads(inputs, opts); err != nil {
		return nil, err
	}
	r := rng.New(opts.Seed)
	w, err := backwardWeighted(forward, r)
	if err != nil {
		return nil, err
	}
	fd := &finiteDifference{forward: forward, w: w, outHost: make([]float32, len(w)), opts: opts}
	results := make([]GradCheckResult, len(inputs))
	var failed error
	for k, in := range inputs {
		res, err := fd.checkInput(in, opts.inputName(k), r)
		if err != nil {
			return results, err
		}
		results[k] = res
		if !res.Pass && failed == nil {
			failed = fmt.Errorf("autograd: gradient check of %s: element %d analytic %.8g numeric %.8g: %w",
				res.Name, res.Worst, res.Analytic, res.Numeric, ErrGradientMismatch)
		}
	}
	return results, failed
}

// withDefaults fills the zero fields and checks the rest are in range.
func (opts GradCheckOptions) withDefaults() (GradCheckOptions, error) {
	if opts.Eps == 0 {
		opts.Eps = 1e-2
	}
	if opts.AbsTol == 0 {
		opts.AbsTol = 1e-3
	}
	if opts.RelTol == 0 {
		opts.RelTol = 1e-2
	}
	if opts.MaxElements == 0 {
		opts.MaxElements = 64
	}
	if !(opts.Eps > 0) || opts.AbsTol < 0 || opts.RelTol < 0 || opts.MaxElements < 0 {
		return opts, fmt.Errorf("autograd: gradient check options out of range: %+v", opts)
	}
	return opts, nil
}

// inputName labels input i in results and errors.
func (opts GradCheckOptions) inputName(i int) string {
	if i < len(opts.Names) {
		return opts.Names[i]
	}
	return fmt.Sprintf("input %d", i)
}

// zeroInputGrads checks every input is a float32 with a gradient and zeroes that gradient.
func zeroInputGrads(inputs []*Var, opts GradCheckOptions) error {
	for i, in := range inputs {
		if in == nil || in.Value == nil || in.Grad == nil {
			return fmt.Errorf("autograd: gradient check: %s has no value or no gradient", opts.inputName(i))
		}
		if in.Value.DType() != tensor.Float32 {
			return fmt.Errorf("autograd: gradient check: %s is %v, want float32", opts.inputName(i), in.Value.DType())
		}
		in.Value.Backend().Fill(in.Grad, 0)
	}
	return nil
}

// backwardWeighted records forward, seeds the output's gradient with random weights w in
// [-1, 1) and runs Backward, leaving dL/dinput for L = sum(out·w) in the inputs' Grads.
func backwardWeighted(forward func(tp *Tape) *Var, r *rng.RNG) ([]float32, error) {
	tp := NewTape()
	out := forward(tp)
	if out == nil || out.Value == nil || out.Grad == nil {
		tp.Reset()
		return nil, fmt.Errorf("autograd: gradient check: forward returned an output without a gradient")
	}
	w := make([]float32, out.Value.Numel())
	for i := range w {
		w[i] = 2*r.Float32() - 1
	}
	if err := out.Value.Backend().Upload(out.Grad, w); err != nil {
		tp.Reset()
		return nil, err
	}
	tp.Backward()
	return w, nil
}

// finiteDifference measures dL/dx numerically by re-running forward without a tape.
type finiteDifference struct {
	forward func(tp *Tape) *Var
	w       []float32 // the output weights of L
	outHost []float32
	opts    GradCheckOptions
}

// loss runs forward(nil) and returns L = sum(out·w) accumulated in float64.
func (fd *finiteDifference) loss() (float64, error) {
	o := fd.forward(nil)
	if o == nil || o.Value.Numel() != len(fd.w) {
		return 0, fmt.Errorf("autograd: gradient check: forward(nil) returned a different output")
	}
	if err := o.Value.Backend().Download(fd.outHost, o.Value); err != nil {
		return 0, err
	}
	var s float64
	for i, v := range fd.outHost {
		s += float64(v) * float64(fd.w[i])
	}
	return s, nil
}

// checkInput compares in's analytic gradient with central differences at a sample of its
// elements.
func (fd *finiteDifference) checkInput(in *Var, name string, r *rng.RNG) (GradCheckResult, error) {
	ib := in.Value.Backend()
	n := in.Value.Numel()
	analytic := make([]float32, n)
	if err := ib.Download(analytic, in.Grad); err != nil {
		return GradCheckResult{}, err
	}
	vals := make([]float32, n)
	if err := ib.Download(vals, in.Value); err != nil {
		return GradCheckResult{}, err
	}
	t := tally{res: GradCheckResult{Name: name, Pass: true, Worst: -1}, worstRatio: -1}
	for _, i := range sampleIndices(n, fd.opts.MaxElements, r) {
		num, err := fd.centralDifference(in, vals, i)
		if err != nil {
			return GradCheckResult{}, err
		}
		t.add(i, float64(analytic[i]), num, fd.opts)
	}
	return t.res, nil
}

// centralDifference returns (L(x+Eps) - L(x-Eps)) / (step taken) for element i of in, whose
// values are vals; in holds vals again afterwards.
func (fd *finiteDifference) centralDifference(in *Var, vals []float32, i int) (float64, error) {
	ib := in.Value.Backend()
	x := vals[i]
	xp, xm := float32(float64(x)+fd.opts.Eps), float32(float64(x)-fd.opts.Eps)
	var lp, lm float64
	var err error
	vals[i] = xp
	if err = ib.Upload(in.Value, vals); err == nil {
		if lp, err = fd.loss(); err == nil {
			vals[i] = xm
			if err = ib.Upload(in.Value, vals); err == nil {
				lm, err = fd.loss()
			}
		}
	}
	vals[i] = x
	if uerr := ib.Upload(in.Value, vals); err == nil {
		err = uerr
	}
	if err != nil {
		return 0, err
	}
	return (lp - lm) / (float64(xp) - float64(xm)), nil
}

// tally accumulates one input's comparison, keeping the element closest to failing.
type tally struct {
	res        GradCheckResult
	worstRatio float64
}

// add compares element i's analytic gradient a with the numeric one num.
func (t *tally) add(i int, a, num float64, opts GradCheckOptions) {
	diff := math.Abs(a - num)
	t.res.Checked++
	t.res.MaxAbsErr = max(t.res.MaxAbsErr, diff)
	t.res.MaxRelErr = max(t.res.MaxRelErr, diff/max(math.Abs(a), math.Abs(num), opts.AbsTol))
	allow := opts.AbsTol + opts.RelTol*math.Abs(num)
	if ratio := diff / allow; ratio > t.worstRatio || math.IsNaN(diff) {
		t.worstRatio, t.res.Worst, t.res.Analytic, t.res.Numeric = ratio, i, a, num
	}
	if !(diff <= allow) {
		t.res.Pass = false
	}
}

// sampleIndices returns every index below n when n <= limit, else limit distinct indices that
// include 0 and n-1, in increasing order.
func sampleIndices(n, limit int, r *rng.RNG) []int {
	if n <= limit {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	seen := make([]bool, n)
	picked := 0
	for _, i := range []int{0, n - 1} {
		if picked < limit {
			seen[i] = true
			picked++
		}
	}
	for picked < limit {
		if i := r.Intn(n); !seen[i] {
			seen[i] = true
			picked++
		}
	}
	idx := make([]int, 0, limit)
	for i, s := range seen {
		if s {
			idx = append(idx, i)
		}
	}
	return idx
}
