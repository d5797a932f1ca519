package autograd_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// mmGeluGrads runs a product and GELU, fused or as MatMul then Gelu, backpropagates dgelu and
// returns out, gelu and the gradients of a, b and bias.
func mmGeluGrads(t *testing.T, fused bool, p tensor.MatMulParams, seed uint64) [][]float32 {
	t.Helper()
	be := cpu.New()
	r := rng.New(seed)
	batch := max(p.Batch, 1)
	a, b := newVar(t, be, r, 0, 1, batch*p.M*p.K), newVar(t, be, r, 0, 1, batch*p.K*p.N)
	bias := newVar(t, be, r, 0.3, 1, p.N)
	out, gelu := zeros(be, batch*p.M*p.N), zeros(be, batch*p.M*p.N)
	dgelu := cpu.Float32s(gelu.Grad)
	for i := range dgelu {
		dgelu[i] = float32(r.Normal())
	}
	tp := autograd.NewTape()
	if fused {
		autograd.MatMulGelu(tp, out, gelu, a, b, bias, p)
	} else {
		autograd.MatMul(tp, out, a, b, bias, p)
		autograd.Gelu(tp, gelu, out)
	}
	tp.Backward()
	var res [][]float32
	for _, x := range []*tensor.Tensor{out.Value, gelu.Value, a.Grad, b.Grad, bias.Grad} {
		res = append(res, append([]float32(nil), cpu.Float32s(x)...))
	}
	return res
}

// TestMatMulGeluMatchesSeparateOps: the fused op's values and gradients are the bits of MatMul
// followed by Gelu, and its gradients are right (central differences).
func TestMatMulGeluMatchesSeparateOps(t *testing.T) {
	names := []string{"out", "gelu", "da", "db", "dbias"}
	for i, p := range []tensor.MatMulParams{{M: 5, N: 12, K: 7, TransB: true}, {M: 6, N: 3, K: 4, TransA: true, Batch: 2}} {
		fused, sep := mmGeluGrads(t, true, p, uint64(i+1)), mmGeluGrads(t, false, p, uint64(i+1))
		for k := range fused {
			for j := range fused[k] {
				if math.Float32bits(fused[k][j]) != math.Float32bits(sep[k][j]) {
					t.Fatalf("%+v %s[%d]: fused %v, separate %v", p, names[k], j, fused[k][j], sep[k][j])
				}
			}
		}
	}
	be := cpu.New()
	r := rng.New(9)
	p := tensor.MatMulParams{M: 4, N: 6, K: 5, TransB: true}
	a, b, bias := newVar(t, be, r, 0, 1, p.M*p.K), newVar(t, be, r, 0, 1, p.N*p.K), newVar(t, be, r, 0.3, 1, p.N)
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		out, gelu := zeros(be, p.M*p.N), zeros(be, p.M*p.N)
		autograd.MatMulGelu(tp, out, gelu, a, b, bias, p)
		return gelu
	}, []*autograd.Var{a, b, bias}, []string{"a", "b", "bias"}, autograd.GradCheckOptions{})
}
