package llama

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/safetensors"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func flatten(rows [][]int) []int32 {
	var out []int32
	for _, r := range rows {
		for _, v := range r {
			out = append(out, int32(v))
		}
	}
	return out
}

// backends opens each backend the model tests run on: the CPU, and Vulkan (skipped without a
// device unless VKGRAD_REQUIRE_VULKAN=1).
var backends = map[string]func(t *testing.T) tensor.Backend{
	"cpu":    func(*testing.T) tensor.Backend { return cpu.New() },
	"vulkan": func(t *testing.T) tensor.Backend { return testutil.Vulkan(t) },
}

// TestModelMatchesFixtures checks the model's logits, loss, every gradient, five AdamW steps and
// a greedy continuation against the float64 reference of each fixture directory.
func TestModelMatchesFixtures(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		for _, bname := range []string{"cpu", "vulkan"} {
			t.Run(filepath.Base(dir)+"/"+bname, func(t *testing.T) { checkFixture(t, backends[bname](t), dir) })
		}
		t.Run(filepath.Base(dir)+"/vulkan-split", func(t *testing.T) { checkFixture(t, splitVulkan(t, dir), dir) })
	}
}

// splitVulkan is the Vulkan backend with allocations capped so that the parameters of the
// model in dir take at least three (as a 2 GiB cap splits a 0.6B model's).
func splitVulkan(t *testing.T, dir string) tensor.Backend {
	vkb := testutil.Vulkan(t)
	cfg, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, s := range cfg.ParamSpecs() {
		largest = max(largest, s.Numel())
	}
	limit := 4 * uint64(max(largest, (cfg.NumParams()+2)/3))
	vkb.Device().LimitAllocations(limit)
	t.Cleanup(func() { vkb.Device().LimitAllocations(math.MaxUint64) })
	return vkb
}

func checkFixture(t *testing.T, be tensor.Backend, dir string) {
	e, sf := readExpected(t, dir)
	m, err := Load(be, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	inputs, targets := flatten(e.InputIDs), flatten(e.Targets)
	if err := m.Forward(nil, inputs, e.B, e.T); err != nil {
		t.Fatal(err)
	}
	logits, err := tensor.ToHost(m.Logits().Value)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sf.Float32("logits_f64")
	if d := maxAbsDiff(logits, want); d > 1e-4 {
		t.Errorf("logits differ by %.3g (tolerance 1e-4)", d)
	}
	// The loss's lm head in chunks of 5 of the 26 rows: the last chunk is short.
	m.HeadChunkRows = 5
	tp := autograd.NewTape()
	loss, err := m.ForwardLoss(tp, inputs, targets, e.B, e.T)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(float64(loss) - e.LossF64); d > 1e-5 {
		t.Errorf("loss %.7f, reference %.7f", loss, e.LossF64)
	}
	if err := m.Backward(tp); err != nil {
		t.Fatal(err)
	}
	if l, ok := be.(tensor.AllocLimiter); ok && l.MaxAllocElems() < m.Config.NumParams() && len(m.Params.Parts()) < 3 {
		t.Errorf("%d parameters in %d allocations of at most %d floats", m.Config.NumParams(), len(m.Params.Parts()), l.MaxAllocElems())
	}
	grads, err := m.Grads.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Config.ParamSpecs() {
		ref, err := sf.Float32("grad_f64." + s.Name)
		if err != nil {
			t.Fatal(err)
		}
		got := grads[s.Offset : s.Offset+s.Numel()]
		var scale float64
		for _, v := range ref {
			scale = max(scale, math.Abs(float64(v)))
		}
		if d := maxAbsDiff(got, ref); d > 1e-4*scale {
			t.Errorf("gradient of %s differs by %.3g (tolerance 1e-4 × max |g| = %.3g)", s.Name, d, 1e-4*scale)
		}
	}
	checkGreedy(t, m, e)
	checkDecoder(t, m, e, sf)
	checkAdamW(t, m, e)
}

// checkAdamW takes five AdamW steps on the fixture's batch (lr 1e-3, betas 0.9/0.95, eps 1e-8,
// weight decay 0.1 on every parameter) and compares the loss before each and after the last.
func checkAdamW(t *testing.T, m *Model, e expected) {
	opt, err := optim.NewAdamW(m.Params, optim.AdamWConfig{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	inputs, targets := flatten(e.InputIDs), flatten(e.Targets)
	tp := autograd.NewTape()
	for step := 0; step <= len(e.AdamWLosses); step++ {
		m.ZeroGrad()
		loss, err := m.ForwardLoss(tp, inputs, targets, e.B, e.T)
		if err != nil {
			t.Fatal(err)
		}
		want := e.AdamWAfter
		if step < len(e.AdamWLosses) {
			want = e.AdamWLosses[step]
		}
		if d := math.Abs(float64(loss) - want); d > 1e-4 {
			t.Errorf("AdamW: loss before step %d is %.6f, reference %.6f", step+1, loss, want)
		}
		if step == len(e.AdamWLosses) {
			tp.Reset()
			break
		}
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		opt.Update(m.Params, m.Grads, 1e-3)
	}
}

// checkGreedy continues the fixture's prompt by argmax, one full forward per token.
func checkGreedy(t *testing.T, m *Model, e expected) {
	seq := make([]int32, len(e.GreedyFrom))
	for i, v := range e.GreedyFrom {
		seq[i] = int32(v)
	}
	for i, want := range e.GreedyIDs {
		if err := m.Forward(nil, seq, 1, len(seq)); err != nil {
			t.Fatal(err)
		}
		logits, err := tensor.ToHost(m.Logits().Value)
		if err != nil {
			t.Fatal(err)
		}
		last := logits[(len(seq)-1)*m.Config.Vocab:]
		best := 0
		for v, x := range last {
			if x > last[best] {
				best = v
			}
		}
		if best != want {
			t.Fatalf("greedy token %d is %d, reference %d", i, best, want)
		}
		seq = append(seq, int32(best))
	}
}

// checkDecoder continues the prompt by argmax with the KV-cache decoder (the prompt in one
// step, then a token per step) and compares tokens and logits with the reference.
func checkDecoder(t *testing.T, m *Model, e expected, sf *safetensors.File) {
	want, err := sf.Float32("greedy_logits_f64")
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.NewDecoder(1, len(e.GreedyFrom)+len(e.GreedyIDs))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	next := make([]int32, len(e.GreedyFrom))
	for i, v := range e.GreedyFrom {
		next[i] = int32(v)
	}
	V := m.Config.Vocab
	for i, id := range e.GreedyIDs {
		logits, err := d.Step(next, len(next))
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxAbsDiff(logits[:V], want[i*V:(i+1)*V]); diff > 1e-4 {
			t.Errorf("decoder step %d: logits differ from the reference by %.3g", i, diff)
		}
		best := 0
		for v, x := range logits[:V] {
			if x > logits[best] {
				best = v
			}
		}
		if best != id {
			t.Fatalf("decoder token %d is %d, reference %d", i, best, id)
		}
		next = []int32{int32(best)}
	}
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}
