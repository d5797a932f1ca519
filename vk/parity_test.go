package vk

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestParityWithCPU runs each implemented op on the CPU reference backend and on Vulkan with
// the same inputs and compares: bitwise for the elementwise ops, within float32 rounding for
// Axpy (the host may fuse the multiply-add) and the reductions (a different summation order).
func TestParityWithCPU(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	const n = 70001
	r := rand.New(rand.NewPCG(7, 7))
	a, c := randVec(r, n), randVec(r, n)

	type pair struct{ v, c *tensor.Tensor }
	mk := func(data []float32) pair {
		tv, err := tensor.FromSlice(vb, data, len(data))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := tensor.FromSlice(cb, data, len(data))
		if err != nil {
			t.Fatal(err)
		}
		return pair{tv, tc}
	}
	x, y, out, s := mk(a), mk(c), mk(make([]float32, n)), mk([]float32{0})
	ops := []struct {
		name string
		run  func(b tensor.Backend, x, y, out, s *tensor.Tensor)
		res  func(p pair) pair // which tensor to compare
		tol  float64           // 0: bitwise; else relative to the magnitude
	}{
		{"Add", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Add(out, x, y) }, func(pair) pair { return out }, 0},
		{"Mul", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Mul(out, x, y) }, func(pair) pair { return out }, 0},
		{"Scale", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Scale(out, -0.3) }, func(pair) pair { return out }, 0},
		{"Copy", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Copy(out, y) }, func(pair) pair { return out }, 0},
		{"Fill", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Fill(out, 0.7) }, func(pair) pair { return out }, 0},
		{"Axpy", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Axpy(out, 1.3, x) }, func(pair) pair { return out }, 1.2e-7},
		{"Sum", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Sum(s, out) }, func(pair) pair { return s }, 1e-6},
		{"SumSquares", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.SumSquares(s, x) }, func(pair) pair { return s }, 1e-6},
	}
	var magnitude float64
	for _, v := range a {
		magnitude += math.Abs(float64(v)) + float64(v)*float64(v)
	}
	for _, op := range ops {
		op.run(vb, x.v, y.v, out.v, s.v)
		op.run(cb, x.c, y.c, out.c, s.c)
		p := op.res(pair{})
		gv, err := tensor.ToHost(p.v)
		if err != nil {
			t.Fatal(err)
		}
		gc, err := tensor.ToHost(p.c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range gv {
			if op.tol == 0 {
				if math.Float32bits(gv[i]) != math.Float32bits(gc[i]) {
					t.Fatalf("%s[%d]: vulkan %g, cpu %g", op.name, i, gv[i], gc[i])
				}
				continue
			}
			scale := math.Abs(float64(gc[i])) + 1e-30
			if len(gv) == 1 {
				scale = magnitude
			}
			if op.name == "Axpy" { // a fused multiply-add rounds once, relative to its terms
				scale += 0.7 + 1.3*math.Abs(float64(a[i]))
			}
			if d := math.Abs(float64(gv[i]) - float64(gc[i])); d > op.tol*scale {
				t.Fatalf("%s[%d]: vulkan %g, cpu %g (|diff| %g > %g)", op.name, i, gv[i], gc[i], d, op.tol*scale)
			}
		}
	}
}
