package rl

import (
	"math"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// snapshot is a policy and value head as the host holds them.
type snapshot struct {
	cfg          gpt2.Config
	policy, head []float32
	headCfg      ValueHeadConfig
}

// outputs evaluates a snapshot on one backend: per-token values and policy log-probs (at the
// sampling temperature) of a batch.
func (s snapshot) outputs(t *testing.T, be tensor.Backend, ids []int32, B, T int) (values, logp []float64) {
	t.Helper()
	m, err := gpt2.New(be, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetParams(s.policy); err != nil {
		t.Fatal(err)
	}
	vh, err := NewValueHead(be, s.cfg.Channels, s.headCfg, optim.DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	if err := vh.SetParams(s.head); err != nil {
		t.Fatal(err)
	}
	targets := make([]int32, len(ids))
	for i := range ids {
		targets[i] = ids[(i/T)*T+min(i%T+1, T-1)]
	}
	if err := m.Forward(nil, ids, B, T); err != nil {
		t.Fatal(err)
	}
	lp, _, err := m.LogProbs(nil, targets, nil, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vh.Forward(nil, m.Hidden(), B*T, false, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return toF64(t, v.Value), toF64(t, lp.Value)
}

func toF64(t *testing.T, x *tensor.Tensor) []float64 {
	h, err := tensor.ToHost(x)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(h))
	for i, v := range h {
		out[i] = float64(v)
	}
	return out
}

func pearson(a, b []float64) float64 {
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}

// ranks gives average ranks (ties share their mean rank), for Spearman's correlation.
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// TestCriticParityAcrossBackends: the value head and the policy's log-probs of the same
// checkpoint agree between the CPU and Vulkan, on random tokens and on task text, before and
// after 10 PPO updates: Pearson and Spearman >= 0.999 and max |diff| within float32 bounds.
func TestCriticParityAcrossBackends(t *testing.T) {
	vkb := testutil.Vulkan(t)
	tr := toyPPO(t, func(c *PPOTrainerConfig) {
		c.ValueHead.Init, c.ValueHead.InitValue = "random", 0.5
		c.ValueLR = 3e-2
	})
	take := func() snapshot {
		p, err := paramsToHost(tr.Policy())
		if err != nil {
			t.Fatal(err)
		}
		h, err := tr.Value.ParamsToHost()
		if err != nil {
			t.Fatal(err)
		}
		return snapshot{cfg: tr.Policy().(*nn.GPT2LM).Model.Config, policy: p, head: h, headCfg: tr.Config.ValueHead}
	}
	before := take()
	for i := 0; i < 10; i++ {
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	after := take()

	cfg := before.cfg
	const B, T = 4, 12
	random := make([]int32, B*T)
	r := rng.New(17)
	for i := range random {
		random[i] = int32(r.Intn(cfg.VocabSize))
	}
	var task []int32
	src := toyPrompts(false)
	for len(task) < B*T {
		p, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		task = append(task, toy.Encode(p.Text+p.Answer)...)
		task = append(task, int32(toyEOS))
	}
	task = task[:B*T]

	for _, snap := range []struct {
		name string
		s    snapshot
	}{{"before", before}, {"after 10 PPO updates", after}} {
		for _, batch := range []struct {
			name string
			ids  []int32
		}{{"random tokens", random}, {"task text", task}} {
			cv, cl := snap.s.outputs(t, cpu.New(), batch.ids, B, T)
			gv, gl := snap.s.outputs(t, vkb, batch.ids, B, T)
			for _, out := range []struct {
				name     string
				cpu, gpu []float64
			}{{"values", cv, gv}, {"log-probs", cl, gl}} {
				p, s := pearson(out.cpu, out.gpu), pearson(ranks(out.cpu), ranks(out.gpu))
				maxDiff, scale := 0.0, 1.0
				for i := range out.cpu {
					maxDiff = math.Max(maxDiff, math.Abs(out.cpu[i]-out.gpu[i]))
					scale = math.Max(scale, math.Abs(out.cpu[i]))
				}
				t.Logf("%s, %s, %s: pearson %.7f spearman %.7f max|diff| %.3g", snap.name, batch.name, out.name, p, s, maxDiff)
				if !(p >= 0.999 && s >= 0.999) {
					t.Errorf("%s, %s, %s: pearson %.6f spearman %.6f, want >= 0.999", snap.name, batch.name, out.name, p, s)
				}
				if !(maxDiff <= 1e-4*scale) {
					t.Errorf("%s, %s, %s: max |diff| %.3g > %.3g", snap.name, batch.name, out.name, maxDiff, 1e-4*scale)
				}
			}
		}
	}
}
