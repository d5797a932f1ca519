package autograd_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// Finite-difference checks of the Llama-family ops on the CPU backend (which the Vulkan ops
// are compared against op by op).

func TestGradRMSNorm(t *testing.T) {
	be := cpu.New()
	r := rng.New(31)
	const N, C = 4, 13
	x := newVar(t, be, r, 0.2, 1, N, C)
	w := newVar(t, be, r, 1, 0.5, C)
	rstd := scratch(be, N)
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, N, C)
		autograd.RMSNorm(tp, out, rstd, x, w, N, C, 1e-5)
		return out
	}
	gradCheck(t, fwd, []*autograd.Var{x, w}, []string{"x", "w"}, autograd.GradCheckOptions{Eps: 1e-2})
}

// ropeTable is per position D/2 cosines then D/2 sines of pos · base^(-2i/D).
func ropeTable(t *testing.T, be tensor.Backend, positions, D int) *tensor.Tensor {
	data := make([]float32, positions*D)
	for p := range positions {
		for i := range D / 2 {
			a := float64(p) * math.Pow(100, -float64(2*i)/float64(D))
			data[p*D+i], data[p*D+D/2+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	tab, err := tensor.FromSlice(be, data, len(data))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestGradRoPE(t *testing.T) {
	be := cpu.New()
	r := rng.New(32)
	const B, T, H, rot, D, pos0 = 2, 5, 3, 2, 6, 2
	rowLen := H * D
	x := newVar(t, be, r, 0, 1, B*T, rowLen)
	tab := ropeTable(t, be, pos0+T, D)
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, B*T, rowLen)
		autograd.RoPE(tp, out, x, tab, B*T, T, pos0, H, rot, rowLen)
		return out
	}
	gradCheck(t, fwd, []*autograd.Var{x}, []string{"x"}, autograd.GradCheckOptions{Eps: 1e-2})

	// A rotation keeps each pair's length, and the last head is copied unchanged.
	out := fwd(nil)
	in, got := cpu.Float32s(x.Value), cpu.Float32s(out.Value)
	for row := range B * T {
		for i := range D / 2 {
			a, b := row*rowLen+i, row*rowLen+i+D/2
			if d := math.Hypot(float64(in[a]), float64(in[b])) - math.Hypot(float64(got[a]), float64(got[b])); math.Abs(d) > 1e-5 {
				t.Fatalf("row %d pair %d: length changed by %g", row, i, d)
			}
		}
		for i := rot * D; i < rowLen; i++ {
			if got[row*rowLen+i] != in[row*rowLen+i] {
				t.Fatalf("row %d: element %d of an unrotated head changed", row, i)
			}
		}
	}
}

func TestGradSwiGLU(t *testing.T) {
	be := cpu.New()
	r := rng.New(33)
	const N, I = 3, 7
	gate, up := newVar(t, be, r, 0, 2, N, I), newVar(t, be, r, 0, 2, N, I)
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, N, I)
		autograd.SwiGLU(tp, out, gate, up)
		return out
	}
	gradCheck(t, fwd, []*autograd.Var{gate, up}, []string{"gate", "up"}, autograd.GradCheckOptions{Eps: 1e-2})
	g, u := float64(cpu.Float32s(gate.Value)[0]), float64(cpu.Float32s(up.Value)[0])
	if got, want := float64(cpu.Float32s(fwd(nil).Value)[0]), g/(1+math.Exp(-g))*u; math.Abs(got-want) > 1e-6*max(1, math.Abs(want)) {
		t.Errorf("silu(g)*u = %v, want %v", got, want)
	}
}

func TestGradEmbedding(t *testing.T) {
	be := cpu.New()
	r := rng.New(34)
	const N, V, C = 6, 4, 5
	wte := newVar(t, be, r, 0, 1, V, C)
	tok, err := tensor.FromInt32(be, []int32{3, 1, 3, 0, 2, 3}, N)
	if err != nil {
		t.Fatal(err)
	}
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, N, C)
		autograd.Embedding(tp, out, tok, wte, N, C)
		return out
	}
	gradCheck(t, fwd, []*autograd.Var{wte}, []string{"wte"}, autograd.GradCheckOptions{Eps: 1e-2})
}

func TestGradPackQKV(t *testing.T) {
	be := cpu.New()
	r := rng.New(35)
	const N, H, KV, D = 3, 6, 2, 4
	q := newVar(t, be, r, 0, 1, N, H*D)
	k := newVar(t, be, r, 0, 1, N, KV*D)
	v := newVar(t, be, r, 0, 1, N, KV*D)
	fwd := func(tp *autograd.Tape) *autograd.Var {
		out := zeros(be, N, 3*H*D)
		autograd.PackQKV(tp, out, q, k, v, N, H, KV, D)
		return out
	}
	gradCheck(t, fwd, []*autograd.Var{q, k, v}, []string{"q", "k", "v"}, autograd.GradCheckOptions{Eps: 1e-2})
	// Query head 4 reads KV head 4/(6/2) = 1.
	out, kv := cpu.Float32s(fwd(nil).Value), cpu.Float32s(k.Value)
	if got, want := out[H*D+4*D+1], kv[1*D+1]; got != want {
		t.Errorf("k copy of head 4 = %v, want KV head 1's %v", got, want)
	}
}
