package rl

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The head fits a linear target by its own gradients, passes its gradient to the hidden states
// unless detached, and applies dropout only while training.
func TestValueHeadFitsAndRoutesGradients(t *testing.T) {
	be := cpu.NewWithThreads(1)
	const n, C = 40, 8
	r := rng.New(4)
	h := make([]float32, n*C)
	y := make([]float64, n)
	for i := range n {
		for c := range C {
			h[i*C+c] = float32(r.Normal())
			y[i] += float64(h[i*C+c]) * float64(c-3) / 4
		}
		y[i] += 0.5
	}
	hidden, err := autograd.NewVar(be, true, n, C)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(hidden.Value, h); err != nil {
		t.Fatal(err)
	}
	opt := optim.DefaultAdamW()
	vh, err := NewValueHead(be, C, ValueHeadConfig{Init: "random", InitValue: 0.1, Seed: 2}, opt)
	if err != nil {
		t.Fatal(err)
	}
	mse := func() float64 {
		v, err := vh.Forward(nil, hidden, n, false, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := tensor.ToHost(v.Value)
		var s float64
		for i := range n {
			s += (float64(got[i]) - y[i]) * (float64(got[i]) - y[i]) / n
		}
		return s
	}
	first := mse()
	tp := autograd.NewTape()
	g := make([]float32, n)
	for step := 0; step < 300; step++ {
		v, err := vh.Forward(tp, hidden, n, true, uint64(step), true)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := tensor.ToHost(v.Value)
		for i := range n {
			g[i] = float32((float64(got[i]) - y[i]) / n)
		}
		if err := be.Upload(v.Grad, g); err != nil {
			t.Fatal(err)
		}
		tp.Backward()
		if _, err := vh.Update(0.05); err != nil {
			t.Fatal(err)
		}
	}
	if last := mse(); !(first > 0.5 && last < 1e-3) {
		t.Fatalf("mean squared error %.4g -> %.4g; want the head to fit the linear target", first, last)
	}
	hg, _ := tensor.ToHost(hidden.Grad)
	for i, v := range hg {
		if v != 0 {
			t.Fatalf("detached head wrote hidden gradient %d: %v", i, v)
		}
	}
	// Not detached: d values / d hidden = w, so the hidden gradient of a seed of ones is w per row.
	v, _ := vh.Forward(tp, hidden, n, false, 0, false)
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	be.Upload(v.Grad, ones)
	tp.Backward()
	vh.ZeroGrad()
	w, _ := vh.ParamsToHost()
	hg, _ = tensor.ToHost(hidden.Grad)
	for i := range n {
		for c := range C {
			if hg[i*C+c] != w[c] {
				t.Fatalf("hidden gradient [%d,%d] = %v, want w[%d] = %v", i, c, hg[i*C+c], c, w[c])
			}
		}
	}
	// Dropout: the training pass zeroes some features (values change), evaluation does not.
	dcfg := ValueHeadConfig{Init: "constant", InitValue: 0.1, Dropout: 0.5, Seed: 1}
	dh, _ := NewValueHead(be, C, dcfg, opt)
	eval, _ := dh.Forward(nil, hidden, n, false, 7, false)
	ev, _ := tensor.ToHost(eval.Value)
	train, _ := dh.Forward(nil, hidden, n, true, 7, false)
	tv, _ := tensor.ToHost(train.Value)
	diff := 0
	for i := range n {
		var want float64
		for c := range C {
			want += 0.1 * float64(h[i*C+c])
		}
		if math.Abs(float64(ev[i])-want) > 1e-5 {
			t.Fatalf("constant head value %d: %v, want %v", i, ev[i], want)
		}
		if ev[i] != tv[i] {
			diff++
		}
	}
	if diff < n/2 {
		t.Fatalf("dropout 0.5 changed %d of %d values", diff, n)
	}
	for _, bad := range []ValueHeadConfig{{Init: "xavier"}, {Init: "random", InitValue: 0}, {Init: "zero", Dropout: 1}} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "value_") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
