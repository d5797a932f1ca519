package autograd_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// newVar allocates a Var with a gradient whose values are mean + std·N(0,1).
func newVar(t *testing.T, be tensor.Backend, r *rng.RNG, mean, std float64, shape ...int) *autograd.Var {
	t.Helper()
	v, err := autograd.NewVar(be, true, shape...)
	if err != nil {
		t.Fatal(err)
	}
	x := cpu.Float32s(v.Value)
	for i := range x {
		x[i] = float32(mean + std*r.Normal())
	}
	return v
}

// zeros allocates an output or intermediate Var (value and gradient zero).
func zeros(be tensor.Backend, shape ...int) *autograd.Var {
	v, err := autograd.NewVar(be, true, shape...)
	if err != nil {
		panic(err)
	}
	return v
}

func scratch(be tensor.Backend, shape ...int) *tensor.Tensor {
	s, err := tensor.New(be, tensor.Float32, shape...)
	if err != nil {
		panic(err)
	}
	return s
}

func ints(t *testing.T, be tensor.Backend, ids ...int32) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromInt32(be, ids, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// gradCheck runs CheckGradients and fails the test on any mismatch, logging every input's errors.
func gradCheck(t *testing.T, fwd func(*autograd.Tape) *autograd.Var, inputs []*autograd.Var, names []string, opts autograd.GradCheckOptions) []autograd.GradCheckResult {
	t.Helper()
	opts.Names = names
	res, err := autograd.CheckGradients(fwd, inputs, opts)
	for _, r := range res {
		t.Logf("%v", r)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Checked == 0 {
			t.Fatalf("%s: no elements checked", names[i])
		}
	}
	return res
}

func TestGradMatMul(t *testing.T) {
	be := cpu.New()
	shapes := [][3]int{{5, 3, 7}, {1, 4, 3}, {6, 1, 5}, {3, 5, 1}}
	n := 0
	for _, batch := range []int{1, 3} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, withBias := range []bool{false, true} {
					s := shapes[n%len(shapes)]
					n++
					M, N, K := s[0], s[1], s[2]
					p := tensor.MatMulParams{M: M, N: N, K: K, TransA: ta, TransB: tb, Batch: batch}
					t.Run(fmt.Sprintf("M%dN%dK%d_ta%v_tb%v_bias%v_batch%d", M, N, K, ta, tb, withBias, batch), func(t *testing.T) {
						r := rng.New(uint64(n))
						a := newVar(t, be, r, 0, 1, batch*M*K)
						b := newVar(t, be, r, 0, 1, batch*K*N)
						inputs, names := []*autograd.Var{a, b}, []string{"a", "b"}
						var bias *autograd.Var
						if withBias {
							bias = newVar(t, be, r, 0.3, 1, N)
							inputs, names = append(inputs, bias), append(names, "bias")
						}
						gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
							out := zeros(be, batch*M*N)
							autograd.MatMul(tp, out, a, b, bias, p)
							return out
						}, inputs, names, autograd.GradCheckOptions{})
					})
				}
			}
		}
	}
}

func TestGradLayerNorm(t *testing.T) {
	be := cpu.New()
	for _, s := range [][2]int{{7, 13}, {1, 5}, {3, 2}} {
		N, C := s[0], s[1]
		t.Run(fmt.Sprintf("N%dC%d", N, C), func(t *testing.T) {
			r := rng.New(2)
			// Rows spread well beyond Eps: with C=2 the normalised values are nearly ±1 and a row
			// whose two entries are close makes central differences truncate badly.
			inp := newVar(t, be, r, 0.5, 2, N, C)
			w := newVar(t, be, r, 1, 0.3, C)
			b := newVar(t, be, r, 0, 0.3, C)
			mean, rstd := scratch(be, N), scratch(be, N)
			gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
				out := zeros(be, N, C)
				autograd.LayerNorm(tp, out, mean, rstd, inp, w, b, N, C)
				return out
			}, []*autograd.Var{inp, w, b}, []string{"inp", "weight", "bias"}, autograd.GradCheckOptions{})
		})
	}
}

func TestGradGelu(t *testing.T) {
	be := cpu.New()
	r := rng.New(3)
	inp := newVar(t, be, r, 0, 2, 3, 37)
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, 3, 37)
		autograd.Gelu(tp, out, inp)
		return out
	}, []*autograd.Var{inp}, []string{"inp"}, autograd.GradCheckOptions{MaxElements: 200})
}

func TestGradAttention(t *testing.T) {
	be := cpu.New()
	for _, s := range [][4]int{{2, 5, 12, 3}, {2, 5, 12, 1}, {1, 1, 6, 2}, {3, 4, 10, 5}} {
		B, T, C, NH := s[0], s[1], s[2], s[3]
		t.Run(fmt.Sprintf("B%dT%dC%dNH%d", B, T, C, NH), func(t *testing.T) {
			r := rng.New(4)
			qkv := newVar(t, be, r, 0, 1, B, T, 3*C)
			att, sc := scratch(be, B, NH, T, T), scratch(be, B, NH, T, T)
			gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
				out := zeros(be, B, T, C)
				autograd.Attention(tp, out, att, sc, qkv, B, T, C, NH)
				return out
			}, []*autograd.Var{qkv}, []string{"qkv"}, autograd.GradCheckOptions{MaxElements: 400})
		})
	}
}

func TestGradEncoder(t *testing.T) {
	be := cpu.New()
	const B, T, C, V, maxT = 3, 4, 5, 7, 6
	r := rng.New(5)
	wte := newVar(t, be, r, 0, 1, V, C)
	wpe := newVar(t, be, r, 0, 1, maxT, C)
	// Token 2 appears five times and token 6 twice, so the scatter-add accumulates; 0, 3 and 4
	// are absent and must keep a zero gradient, as must wpe rows T..maxT-1.
	tokens := ints(t, be, 2, 2, 5, 2, 1, 6, 2, 6, 2, 5, 1, 5)
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, B, T, C)
		autograd.Encoder(tp, out, tokens, wte, wpe, B, T, C)
		return out
	}, []*autograd.Var{wte, wpe}, []string{"wte", "wpe"}, autograd.GradCheckOptions{})
	dwte, dwpe := cpu.Float32s(wte.Grad), cpu.Float32s(wpe.Grad)
	for _, row := range []int{0, 3, 4} {
		for c := 0; c < C; c++ {
			if g := dwte[row*C+c]; g != 0 {
				t.Fatalf("dwte[%d,%d] = %v for an absent token, want 0", row, c, g)
			}
		}
	}
	for i := T * C; i < maxT*C; i++ {
		if dwpe[i] != 0 {
			t.Fatalf("dwpe[%d] = %v past T, want 0", i, dwpe[i])
		}
	}
}

func TestGradCrossEntropy(t *testing.T) {
	be := cpu.New()
	for _, s := range [][3]int{{5, 7, 9}, {1, 3, 3}, {4, 11, 16}} {
		N, V, Vp := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("N%dV%dVp%d", N, V, Vp), func(t *testing.T) {
			r := rng.New(6)
			logits := newVar(t, be, r, 0, 2, N, Vp)
			tg := make([]int32, N)
			for i := range tg {
				tg[i] = int32(r.Intn(V))
			}
			tg[0] = int32(V - 1)
			targets := ints(t, be, tg...)
			probs := scratch(be, N, Vp)
			gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
				losses := zeros(be, N)
				autograd.CrossEntropy(tp, losses, probs, logits, targets, N, V, Vp)
				return losses
			}, []*autograd.Var{logits}, []string{"logits"}, autograd.GradCheckOptions{MaxElements: 200})
			g := cpu.Float32s(logits.Grad)
			for i := 0; i < N; i++ {
				for v := V; v < Vp; v++ {
					if g[i*Vp+v] != 0 {
						t.Fatalf("dlogits[%d,%d] = %v in a padded column, want 0", i, v, g[i*Vp+v])
					}
				}
			}
			// Backward accumulates and leaves padded columns untouched: a sentinel survives there.
			be.Fill(logits.Grad, 7)
			tp := autograd.NewTape()
			losses := zeros(be, N)
			autograd.CrossEntropy(tp, losses, probs, logits, targets, N, V, Vp)
			be.Fill(losses.Grad, 1)
			tp.Backward()
			var rowSum float64
			for v := 0; v < Vp; v++ {
				if v >= V && g[v] != 7 {
					t.Fatalf("padded dlogits[0,%d] = %v, want the untouched 7", v, g[v])
				}
				if v < V {
					rowSum += float64(g[v]) - 7
				}
			}
			// sum_v (p_v - [v==y]) = 0 over the real vocabulary.
			if math.Abs(rowSum) > 1e-5 {
				t.Fatalf("row 0 gradient sums to %v, want 0", rowSum)
			}
		})
	}
}

func TestGradLogSoftmaxGather(t *testing.T) {
	be := cpu.New()
	const N, V, Vp = 4, 9, 11
	for _, temp := range []float32{0.7, 1.3} {
		for _, mode := range []string{"entropy-grad", "entropy-no-grad", "no-entropy"} {
			t.Run(fmt.Sprintf("T%v_%s", temp, mode), func(t *testing.T) {
				r := rng.New(7)
				logits := newVar(t, be, r, 0, 1.5, N, Vp)
				targets := ints(t, be, 0, 8, 3, 3)
				gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
					switch mode {
					case "entropy-grad":
						// logp and entropy share one output so L weighs both.
						both := zeros(be, 2*N)
						autograd.LogSoftmaxGather(tp, both.View(0, N), both.View(N, N), logits, targets, nil, N, V, Vp, temp)
						return both
					case "entropy-no-grad":
						logp := zeros(be, N)
						ent := &autograd.Var{Value: scratch(be, N)}
						autograd.LogSoftmaxGather(tp, logp, ent, logits, targets, nil, N, V, Vp, temp)
						return logp
					default:
						logp := zeros(be, N)
						autograd.LogSoftmaxGather(tp, logp, nil, logits, targets, nil, N, V, Vp, temp)
						return logp
					}
				}, []*autograd.Var{logits}, []string{"logits"}, autograd.GradCheckOptions{MaxElements: 100})
				g := cpu.Float32s(logits.Grad)
				for i := 0; i < N; i++ {
					for v := V; v < Vp; v++ {
						if g[i*Vp+v] != 0 {
							t.Fatalf("dlogits[%d,%d] = %v in a padded column, want 0", i, v, g[i*Vp+v])
						}
					}
				}
			})
		}
	}
}

func TestGradElementwise(t *testing.T) {
	be := cpu.New()
	const n = 23
	r := rng.New(8)
	a := newVar(t, be, r, 0, 1, n)
	b := newVar(t, be, r, 0, 1, n)
	t.Run("Add", func(t *testing.T) {
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, n)
			autograd.Add(tp, out, a, b)
			return out
		}, []*autograd.Var{a, b}, []string{"a", "b"}, autograd.GradCheckOptions{})
	})
	t.Run("AddSelf", func(t *testing.T) {
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, n)
			autograd.Add(tp, out, a, a)
			return out
		}, []*autograd.Var{a}, []string{"a"}, autograd.GradCheckOptions{})
	})
	t.Run("Scale", func(t *testing.T) {
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, n)
			autograd.Scale(tp, out, a, -1.7)
			return out
		}, []*autograd.Var{a}, []string{"x"}, autograd.GradCheckOptions{})
	})
	t.Run("Mul", func(t *testing.T) {
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, n)
			autograd.Mul(tp, out, a, b)
			return out
		}, []*autograd.Var{a, b}, []string{"a", "b"}, autograd.GradCheckOptions{})
	})
	t.Run("MulSquare", func(t *testing.T) {
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, n)
			autograd.Mul(tp, out, a, a)
			return out
		}, []*autograd.Var{a}, []string{"a"}, autograd.GradCheckOptions{})
	})
	t.Run("Dropout", func(t *testing.T) {
		const m, p, seed = 97, 0.3, 12345
		x := newVar(t, be, r, 0, 1, m)
		mask := scratch(be, m)
		gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
			out := zeros(be, m)
			autograd.Dropout(tp, out, mask, x, p, seed)
			return out
		}, []*autograd.Var{x}, []string{"inp"}, autograd.GradCheckOptions{MaxElements: m})
		dropped := 0
		for i, s := range cpu.Float32s(mask) {
			if want := tensor.DropoutScale(seed, uint32(i), p); s != want {
				t.Fatalf("mask[%d] = %v, want %v", i, s, want)
			}
			if s == 0 {
				dropped++
			}
		}
		// 97 draws at p=0.3: about 29 dropped; both outcomes must occur for the check to mean anything.
		if dropped < 15 || dropped > 45 {
			t.Fatalf("%d of %d dropped at p=%v", dropped, m, p)
		}
	})
}

// chain builds a small graph over every kind of op, for the tape-level tests below. Intermediates
// are fresh each call, so their gradients start at zero.
type chain struct {
	be                     tensor.Backend
	w, bias, lnw, lnb      *autograd.Var
	wte, wpe               *autograd.Var
	tokens, targets        *tensor.Tensor
	mean, rstd, att, attSc *tensor.Tensor
	probs, mask            *tensor.Tensor
}

const chB, chT, chC, chNH, chV, chVp = 2, 3, 6, 2, 5, 7

func newChain(t *testing.T) *chain {
	be := cpu.New()
	r := rng.New(9)
	N := chB * chT
	return &chain{
		be:      be,
		w:       newVar(t, be, r, 0, 0.5, 3*chC, chC),
		bias:    newVar(t, be, r, 0, 0.5, 3*chC),
		lnw:     newVar(t, be, r, 1, 0.2, chC),
		lnb:     newVar(t, be, r, 0, 0.2, chC),
		wte:     newVar(t, be, r, 0, 1, chVp, chC),
		wpe:     newVar(t, be, r, 0, 1, chT, chC),
		tokens:  ints(t, be, 1, 4, 1, 0, 2, 4),
		targets: ints(t, be, 4, 1, 0, 2, 4, 3),
		mean:    scratch(be, N), rstd: scratch(be, N),
		att: scratch(be, chB, chNH, chT, chT), attSc: scratch(be, chB, chNH, chT, chT),
		probs: scratch(be, N, chVp), mask: scratch(be, N, chC),
	}
}

func (c *chain) inputs() []*autograd.Var {
	return []*autograd.Var{c.w, c.bias, c.lnw, c.lnb, c.wte, c.wpe}
}

// forward returns the per-token losses and the logits (read before Backward: Mul and Dropout
// use their outputs as scratch).
func (c *chain) forward(tp *autograd.Tape) (losses, logits *autograd.Var) {
	be, N := c.be, chB*chT
	enc := zeros(be, N, chC)
	autograd.Encoder(tp, enc, c.tokens, c.wte, c.wpe, chB, chT, chC)
	ln := zeros(be, N, chC)
	autograd.LayerNorm(tp, ln, c.mean, c.rstd, enc, c.lnw, c.lnb, N, chC)
	qkv := zeros(be, N, 3*chC)
	autograd.MatMul(tp, qkv, ln, c.w, c.bias, tensor.MatMulParams{M: N, N: 3 * chC, K: chC, TransB: true})
	y := zeros(be, N, chC)
	autograd.Attention(tp, y, c.att, c.attSc, qkv, chB, chT, chC, chNH)
	g := zeros(be, N, chC)
	autograd.Gelu(tp, g, y)
	d := zeros(be, N, chC)
	autograd.Dropout(tp, d, c.mask, g, 0.25, 77)
	sq := zeros(be, N, chC)
	autograd.Mul(tp, sq, d, ln)
	s := zeros(be, N, chC)
	autograd.Scale(tp, s, sq, 3)
	res := zeros(be, N, chC)
	autograd.Add(tp, res, s, enc)
	logits = zeros(be, N, chVp)
	autograd.MatMul(tp, logits, res, c.wte, nil, tensor.MatMulParams{M: N, N: chVp, K: chC, TransB: true})
	losses = zeros(be, N)
	autograd.CrossEntropy(tp, losses, c.probs, logits, c.targets, N, chV, chVp)
	return losses, logits
}

// The whole chain passes a gradient check too, so the tape composes ops correctly.
func TestGradChain(t *testing.T) {
	c := newChain(t)
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		l, _ := c.forward(tp)
		return l
	}, c.inputs(), []string{"w", "bias", "lnw", "lnb", "wte", "wpe"},
		// Eleven float32 ops deep, the loss carries more rounding noise than one op: differences
		// measured here are ~4e-4 at best (Eps 5e-3), so the absolute tolerance is doubled.
		autograd.GradCheckOptions{Eps: 5e-3, AbsTol: 2e-3})
}

func hostGrads(c *chain) [][]float32 {
	var out [][]float32
	for _, v := range c.inputs() {
		out = append(out, append([]float32(nil), cpu.Float32s(v.Grad)...))
	}
	return out
}

func TestBackwardAccumulates(t *testing.T) {
	c := newChain(t)
	run := func() {
		tp := autograd.NewTape()
		l, _ := c.forward(tp)
		c.be.Fill(l.Grad, 1)
		tp.Backward()
		if tp.Len() != 0 {
			t.Fatalf("tape holds %d nodes after Backward, want 0", tp.Len())
		}
	}
	for _, v := range c.inputs() {
		c.be.Fill(v.Grad, 0)
	}
	run()
	once := hostGrads(c)
	run()
	twice := hostGrads(c)
	names := []string{"w", "bias", "lnw", "lnb", "wte", "wpe"}
	for k := range once {
		nonzero, scale := 0, 0.0
		for _, g := range once[k] {
			scale = max(scale, math.Abs(float64(g)))
		}
		for i, g := range once[k] {
			if g != 0 {
				nonzero++
			}
			// Kernels add row by row into the gradient, so the second pass rounds differently
			// from 2x: allow float32 rounding relative to the tensor's scale.
			if d := math.Abs(float64(twice[k][i]) - 2*float64(g)); d > 1e-6*scale {
				t.Fatalf("%s[%d]: after two Backward runs %v, want 2 x %v", names[k], i, twice[k][i], g)
			}
		}
		if nonzero == 0 {
			t.Fatalf("%s: gradient is all zero", names[k])
		}
	}
}

func TestNoGradAndNilTapeRecordNothing(t *testing.T) {
	c := newChain(t)
	tp := autograd.NewTape()
	var lossNo, logitsNo *autograd.Var
	autograd.NoGrad(tp, func() {
		if tp.Recording() {
			t.Fatal("tape records inside NoGrad")
		}
		autograd.NoGrad(tp, func() {}) // nesting restores the outer (off) state
		if tp.Recording() {
			t.Fatal("nested NoGrad switched recording back on")
		}
		lossNo, logitsNo = c.forward(tp)
		tp.Record(func() { t.Fatal("closure recorded under NoGrad ran") })
	})
	if tp.Len() != 0 {
		t.Fatalf("NoGrad recorded %d nodes", tp.Len())
	}
	if !tp.Recording() {
		t.Fatal("NoGrad did not restore recording")
	}
	tp.Backward() // runs nothing, so the Fatal closure above never fires

	var nilTape *autograd.Tape
	if nilTape.Recording() {
		t.Fatal("a nil tape reports recording")
	}
	nilTape.Record(func() {})
	autograd.NoGrad(nilTape, func() {})
	for _, v := range c.inputs() {
		c.be.Fill(v.Grad, 0)
	}
	lossNil, logitsNil := c.forward(nilTape)
	for _, v := range c.inputs() {
		for i, g := range cpu.Float32s(v.Grad) {
			if g != 0 {
				t.Fatalf("a forward on a nil tape touched a gradient (element %d = %v)", i, g)
			}
		}
	}

	rec := autograd.NewTape()
	lossRec, logitsRec := c.forward(rec)
	if rec.Len() != 11 {
		t.Fatalf("recording tape holds %d nodes, want one per op (11)", rec.Len())
	}
	for _, pair := range [][3]*autograd.Var{{lossRec, lossNo, lossNil}, {logitsRec, logitsNo, logitsNil}} {
		a, b, n := cpu.Float32s(pair[0].Value), cpu.Float32s(pair[1].Value), cpu.Float32s(pair[2].Value)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) || math.Float32bits(a[i]) != math.Float32bits(n[i]) {
				t.Fatalf("element %d: recording %v, NoGrad %v, nil tape %v: want bitwise equal", i, a[i], b[i], n[i])
			}
		}
	}
	rec.Reset()
}

func TestRecordRunsInReverse(t *testing.T) {
	tp := autograd.NewTape()
	var order []int
	for i := range 3 {
		tp.Record(func() { order = append(order, i) })
	}
	if tp.Len() != 3 {
		t.Fatalf("Len %d, want 3", tp.Len())
	}
	tp.Backward()
	if fmt.Sprint(order) != "[2 1 0]" {
		t.Fatalf("closures ran in order %v, want [2 1 0]", order)
	}
}

// The checker itself must fail on a wrong gradient: a backward that is off by a factor of 1.1.
func TestCheckGradientsCatchesWrongGradient(t *testing.T) {
	be := cpu.New()
	r := rng.New(10)
	x := newVar(t, be, r, 0, 1, 3, 5)
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, 3, 5)
		// Forward 2x, backward claims 2.2x.
		be.Copy(out.Value, x.Value)
		be.Scale(out.Value, 2)
		tp.Record(func() { be.Axpy(x.Grad, 2.2, out.Grad) })
		return out
	}
	res, err := autograd.CheckGradients(fwd, []*autograd.Var{x}, autograd.GradCheckOptions{})
	if !errors.Is(err, autograd.ErrGradientMismatch) {
		t.Fatalf("err = %v, want ErrGradientMismatch", err)
	}
	if len(res) != 1 || res[0].Pass || res[0].Checked != 15 || res[0].MaxRelErr < 0.05 {
		t.Fatalf("results %+v, want a failed input with 15 elements and rel err ~0.09", res)
	}

	// Misuse is an error, not a panic.
	noGrad := &autograd.Var{Value: x.Value}
	if _, err := autograd.CheckGradients(fwd, []*autograd.Var{noGrad}, autograd.GradCheckOptions{}); err == nil {
		t.Fatal("an input without a gradient was accepted")
	}
}

// Large inputs are sampled: MaxElements elements, first and last included, the same each run.
func TestCheckGradientsSamples(t *testing.T) {
	be := cpu.New()
	r := rng.New(11)
	x := newVar(t, be, r, 0, 1, 1000)
	calls := 0
	fwd := func(tp *autograd.Tape) *autograd.Var {
		calls++
		out := zeros(be, 1000)
		autograd.Gelu(tp, out, x)
		return out
	}
	res, err := autograd.CheckGradients(fwd, []*autograd.Var{x}, autograd.GradCheckOptions{MaxElements: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Checked != 10 || calls != 1+2*10 {
		t.Fatalf("checked %d elements in %d forward calls, want 10 in 21", res[0].Checked, calls)
	}
	res2, err := autograd.CheckGradients(fwd, []*autograd.Var{x}, autograd.GradCheckOptions{MaxElements: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != res2[0] {
		t.Fatalf("two runs with the same seed differ: %+v vs %+v", res[0], res2[0])
	}
}

// A Var with a nil Grad means no gradient is wanted for it, not that nothing downstream is:
// an entropy-only objective (logp without a gradient, entropy with one) must still reach the
// logits.
func TestLogSoftmaxGatherEntropyOnlyGradient(t *testing.T) {
	be := cpu.New()
	const N, V, Vp = 3, 6, 8
	r := rng.New(12)
	logits := newVar(t, be, r, 0, 1.5, N, Vp)
	targets := ints(t, be, 1, 5, 0)
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		logp := &autograd.Var{Value: scratch(be, N)}
		ent := zeros(be, N)
		autograd.LogSoftmaxGather(tp, logp, ent, logits, targets, nil, N, V, Vp, 1.1)
		return ent
	}, []*autograd.Var{logits}, []string{"logits"}, autograd.GradCheckOptions{})
}

// GatherRows copies the chosen rows (runs of consecutive rows in one copy) and adds their
// gradient back into the same rows, twice for a row chosen twice.
func TestGatherRows(t *testing.T) {
	be := cpu.New()
	src, err := autograd.NewVar(be, true, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := autograd.NewVar(be, true, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(src.Value, []float32{0, 1, 10, 11, 20, 21, 30, 31, 40, 41}); err != nil {
		t.Fatal(err)
	}
	tp := autograd.NewTape()
	autograd.GatherRows(tp, dst, src, []int{1, 2, 4, 1}, 2)
	got, _ := tensor.ToHost(dst.Value)
	if fmt.Sprint(got) != "[10 11 20 21 40 41 10 11]" {
		t.Fatalf("gathered %v", got)
	}
	if err := be.Upload(dst.Grad, []float32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	tp.Backward()
	g, _ := tensor.ToHost(src.Grad)
	if fmt.Sprint(g) != "[0 0 8 10 3 4 0 0 5 6]" {
		t.Fatalf("gradient %v", g)
	}
}
