package gpt2_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// This file checks the float32 model against a float64 GPT-2 written here from the definition,
// on shapes unlike the shared llm.c fixture: odd head counts and widths, T < maxT and T = maxT,
// a padded and an unpadded vocabulary.

// refGPT2 is a float64 GPT-2 over the flat llm.c-order parameter vector.
type refGPT2 struct {
	cfg gpt2.Config
	off map[string]int
}

func newRef(cfg gpt2.Config) *refGPT2 {
	r := &refGPT2{cfg: cfg, off: map[string]int{}}
	o := 0
	for _, s := range cfg.ParamSpecs() {
		r.off[s.Name] = o
		o += s.Numel()
	}
	return r
}

// param returns the slice of parameter name for layer l (per-layer tensors) of n elements.
func (r *refGPT2) param(p []float64, name string, l, n int) []float64 {
	o := r.off[name] + l*n
	return p[o : o+n]
}

func refLayerNorm(x, w, b []float64) []float64 {
	C := float64(len(x))
	var mean, v float64
	for _, xi := range x {
		mean += xi
	}
	mean /= C
	for _, xi := range x {
		v += (xi - mean) * (xi - mean)
	}
	rstd := 1 / math.Sqrt(v/C+1e-5)
	out := make([]float64, len(x))
	for i, xi := range x {
		out[i] = (xi-mean)*rstd*w[i] + b[i]
	}
	return out
}

// refLinear returns W x + b for W stored (out, in) row-major, as GPT-2's weights are.
func refLinear(x, W, b []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := range y {
		s := 0.0
		if b != nil {
			s = b[o]
		}
		for i, xi := range x {
			s += W[o*in+i] * xi
		}
		y[o] = s
	}
	return y
}

func refGelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// forward returns the logits (B*T rows of Vp) and the mean cross-entropy over the first V.
func (r *refGPT2) forward(p []float64, inputs, targets []int32, B, T int) ([][]float64, float64) {
	cfg := r.cfg
	C, NH, L, V, Vp := cfg.Channels, cfg.NumHeads, cfg.NumLayers, cfg.VocabSize, cfg.PaddedVocabSize
	hs := C / NH
	wte, wpe := p[r.off["wte"]:r.off["wte"]+Vp*C], p[r.off["wpe"]:]
	x := make([][]float64, B*T)
	for i := range x {
		tok, t := int(inputs[i]), i%T
		x[i] = make([]float64, C)
		for c := range C {
			x[i][c] = wte[tok*C+c] + wpe[t*C+c]
		}
	}
	for l := range L {
		qkv := make([][]float64, B*T)
		for i := range x {
			ln := refLayerNorm(x[i], r.param(p, "ln1w", l, C), r.param(p, "ln1b", l, C))
			qkv[i] = refLinear(ln, r.param(p, "qkvw", l, 3*C*C), r.param(p, "qkvb", l, 3*C), 3*C)
		}
		y := make([][]float64, B*T)
		for i := range y {
			y[i] = make([]float64, C)
		}
		scale := 1 / math.Sqrt(float64(hs))
		for b := range B {
			for h := range NH {
				for t := range T {
					q := qkv[b*T+t][h*hs : (h+1)*hs]
					scores := make([]float64, t+1)
					maxs := math.Inf(-1)
					for t2 := 0; t2 <= t; t2++ {
						k := qkv[b*T+t2][C+h*hs : C+(h+1)*hs]
						s := 0.0
						for i := range hs {
							s += q[i] * k[i]
						}
						scores[t2] = s * scale
						maxs = max(maxs, scores[t2])
					}
					sum := 0.0
					for t2 := range scores {
						scores[t2] = math.Exp(scores[t2] - maxs)
						sum += scores[t2]
					}
					for t2, a := range scores {
						v := qkv[b*T+t2][2*C+h*hs : 2*C+(h+1)*hs]
						for i := range hs {
							y[b*T+t][h*hs+i] += a / sum * v[i]
						}
					}
				}
			}
		}
		for i := range x {
			proj := refLinear(y[i], r.param(p, "attprojw", l, C*C), r.param(p, "attprojb", l, C), C)
			res2 := make([]float64, C)
			for c := range C {
				res2[c] = x[i][c] + proj[c]
			}
			ln := refLayerNorm(res2, r.param(p, "ln2w", l, C), r.param(p, "ln2b", l, C))
			h := refLinear(ln, r.param(p, "fcw", l, 4*C*C), r.param(p, "fcb", l, 4*C), 4*C)
			for j := range h {
				h[j] = refGelu(h[j])
			}
			out := refLinear(h, r.param(p, "fcprojw", l, 4*C*C), r.param(p, "fcprojb", l, C), C)
			for c := range C {
				x[i][c] = res2[c] + out[c]
			}
		}
	}
	logits := make([][]float64, B*T)
	loss := 0.0
	for i := range x {
		lnf := refLayerNorm(x[i], r.param(p, "lnfw", 0, C), r.param(p, "lnfb", 0, C))
		logits[i] = refLinear(lnf, wte, nil, Vp) // tied lm head over every padded row
		maxv := math.Inf(-1)
		for _, v := range logits[i][:V] {
			maxv = max(maxv, v)
		}
		sum := 0.0
		for _, v := range logits[i][:V] {
			sum += math.Exp(v - maxv)
		}
		loss += -(logits[i][targets[i]] - maxv - math.Log(sum))
	}
	return logits, loss / float64(B*T)
}

// refLogProb returns log softmax(logits[:V]/temp)[target] and the entropy of that distribution.
func refLogProb(logits []float64, target int, temp float64) (logp, entropy float64) {
	z := make([]float64, len(logits))
	zmax := math.Inf(-1)
	for i, v := range logits {
		z[i] = v / temp
		zmax = max(zmax, z[i])
	}
	sum := 0.0
	for _, zi := range z {
		sum += math.Exp(zi - zmax)
	}
	logZ := zmax + math.Log(sum)
	for _, zi := range z {
		entropy -= math.Exp(zi-logZ) * (zi - logZ)
	}
	return z[target] - logZ, entropy
}

// rlTemp and rlWeights define the RL-style objective sum_i a_i logp_i + b_i H_i checked below,
// with log-probs at a sampling temperature as the RL losses use them.
const rlTemp = 0.8

func rlWeights(n int) (a, b []float32) {
	r := rng.New(99)
	a, b = make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = (2*r.Float32() - 1) / float32(n)
		b[i] = (2*r.Float32() - 1) / float32(n)
	}
	return a, b
}

type refCase struct {
	cfg  gpt2.Config
	B, T int
}

func refCases() []refCase {
	return []refCase{
		{gpt2.Config{NumLayers: 2, NumHeads: 3, Channels: 48, MaxSeqLen: 16, VocabSize: 37, PaddedVocabSize: 40}, 2, 11},
		{gpt2.Config{NumLayers: 1, NumHeads: 5, Channels: 20, MaxSeqLen: 9, VocabSize: 23, PaddedVocabSize: 23}, 3, 9},
	}
}

func (c refCase) String() string { return fmt.Sprintf("%v_B%d_T%d", c.cfg, c.B, c.T) }

// refParams draws parameters large enough that every tensor carries a clear gradient and
// attention is far from uniform. The padded rows of wte are non-zero on purpose: the loss must
// ignore them, so their gradient must still be exactly zero.
func refParams(cfg gpt2.Config, seed uint64) []float32 {
	r := rng.New(seed)
	p := make([]float32, cfg.NumParams())
	off := 0
	for _, s := range cfg.ParamSpecs() {
		mean, std := 0.0, 0.1
		switch s.Name {
		case "wte", "wpe":
			std = 0.3
		case "qkvw":
			std = 0.2
		case "fcw":
			std = 0.15
		case "fcprojw":
			std = 0.05
		case "ln1w", "ln2w", "lnfw":
			mean = 1
		}
		for i := range s.Numel() {
			p[off+i] = float32(mean + std*r.Normal())
		}
		off += s.Numel()
	}
	return p
}

func refTokens(n, V int, r *rng.RNG) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(r.Intn(V))
	}
	ids[0], ids[n-1] = int32(V-1), 0 // the vocabulary's ends
	return ids
}

func newRefModel(t *testing.T, c refCase, p []float32) *gpt2.Model {
	t.Helper()
	m, err := gpt2.New(cpu.New(), c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableGrads(); err != nil {
		t.Fatal(err)
	}
	return m
}

func to64(p []float32) []float64 {
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = float64(v)
	}
	return out
}

func TestReferenceForward(t *testing.T) {
	for _, c := range refCases() {
		t.Run(c.String(), func(t *testing.T) {
			r := rng.New(21)
			p := refParams(c.cfg, 1)
			in, tg := refTokens(c.B*c.T, c.cfg.VocabSize, r), refTokens(c.B*c.T, c.cfg.VocabSize, r)
			m := newRefModel(t, c, p)
			loss, err := m.ForwardLoss(nil, in, tg, c.B, c.T)
			if err != nil {
				t.Fatal(err)
			}
			logits, err := tensor.ToHost(m.Logits().Value)
			if err != nil {
				t.Fatal(err)
			}
			refLogits, refLoss := newRef(c.cfg).forward(to64(p), in, tg, c.B, c.T)
			Vp := c.cfg.PaddedVocabSize
			maxDiff, maxAbs := 0.0, 0.0
			for i, row := range refLogits {
				for v, want := range row {
					maxDiff = max(maxDiff, math.Abs(float64(logits[i*Vp+v])-want))
					maxAbs = max(maxAbs, math.Abs(want))
				}
			}
			lossDiff := math.Abs(float64(loss) - refLoss)
			t.Logf("logits max |diff| %.3g (max |logit| %.3g), loss %.7f vs float64 %.7f (|diff| %.3g)", maxDiff, maxAbs, loss, refLoss, lossDiff)
			if maxDiff > 1e-5 || lossDiff > 1e-5 {
				t.Fatalf("logits max |diff| %v, loss |diff| %v, want <= 1e-5", maxDiff, lossDiff)
			}
			if maxAbs < 1 || refLoss < 1 {
				t.Fatalf("degenerate case: max |logit| %v, loss %v", maxAbs, refLoss)
			}
			logp, ent, err := m.LogProbs(nil, tg, nil, rlTemp)
			if err != nil {
				t.Fatal(err)
			}
			lp, _ := tensor.ToHost(logp.Value)
			h, _ := tensor.ToHost(ent.Value)
			lpDiff, hDiff := 0.0, 0.0
			for i, row := range refLogits {
				wantLp, wantH := refLogProb(row[:c.cfg.VocabSize], int(tg[i]), rlTemp)
				lpDiff = max(lpDiff, math.Abs(float64(lp[i])-wantLp))
				hDiff = max(hDiff, math.Abs(float64(h[i])-wantH))
			}
			t.Logf("logp at T=%v max |diff| %.3g, entropy max |diff| %.3g", rlTemp, lpDiff, hDiff)
			if lpDiff > 1e-5 || hDiff > 1e-5 {
				t.Fatalf("logp max |diff| %v, entropy max |diff| %v, want <= 1e-5", lpDiff, hDiff)
			}
		})
	}
}

// TestReferenceGradients compares the model's backward with central differences of the float64
// reference, for the mean loss and for an RL objective over log-probs and entropies. In float64 a step of 1e-5 leaves truncation (~1e-10) and rounding (~1e-11)
// errors far below float32's, so the difference measures the float32 gradient alone. An element
// passes when |g - fd| <= 1e-3 * max(|fd|, 1e-2 * max |g| over its tensor): relative 1e-3 for
// the large elements, and an absolute floor for those that are small by cancellation.
func TestReferenceGradients(t *testing.T) {
	const samples, h = 16, 1e-5
	for _, c := range refCases() {
		for _, objective := range []string{"loss", "logprobs"} {
			t.Run(c.String()+"_"+objective, func(t *testing.T) {
				refGradients(t, c, objective, samples, h)
			})
		}
	}
}

// refGradients checks one case: objective "loss" is the mean cross-entropy through ForwardLoss
// and Backward; "logprobs" is sum_i a_i logp_i + b_i H_i through LogProbs at rlTemp, seeded by
// hand as an RL trainer does.
func refGradients(t *testing.T, c refCase, objective string, samples int, h float64) {
	cfg := c.cfg
	r := rng.New(22)
	p := refParams(cfg, 2)
	in, tg := refTokens(c.B*c.T, cfg.VocabSize, r), refTokens(c.B*c.T, cfg.VocabSize, r)
	m := newRefModel(t, c, p)
	m.ZeroGrad()
	tp := autograd.NewTape()
	wa, wb := rlWeights(c.B * c.T)
	if objective == "loss" {
		if _, err := m.ForwardLoss(tp, in, tg, c.B, c.T); err != nil {
			t.Fatal(err)
		}
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := m.Forward(tp, in, c.B, c.T); err != nil {
			t.Fatal(err)
		}
		logp, ent, err := m.LogProbs(tp, tg, nil, rlTemp)
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroActGrads()
		if err := m.Backend.Upload(logp.Grad, wa); err != nil {
			t.Fatal(err)
		}
		if err := m.Backend.Upload(ent.Grad, wb); err != nil {
			t.Fatal(err)
		}
		tp.Backward()
	}
	g, err := m.GradsToHost()
	if err != nil {
		t.Fatal(err)
	}
	ref := newRef(cfg)
	p64 := to64(p)
	refLoss := func() float64 {
		logits, l := ref.forward(p64, in, tg, c.B, c.T)
		if objective == "loss" {
			return l
		}
		obj := 0.0
		for i, row := range logits {
			lp, ent := refLogProb(row[:cfg.VocabSize], int(tg[i]), rlTemp)
			obj += float64(wa[i])*lp + float64(wb[i])*ent
		}
		return obj
	}
	C := cfg.Channels
	worstRel, off := 0.0, 0
	for _, s := range cfg.ParamSpecs() {
		gs := g[off : off+s.Numel()]
		// Rows no token reaches get exactly zero: the padded vocabulary and positions >= T.
		live := s.Numel()
		switch s.Name {
		case "wte":
			live = cfg.VocabSize * C
		case "wpe":
			live = c.T * C
		}
		for i := live; i < len(gs); i++ {
			if gs[i] != 0 {
				t.Fatalf("%s[%d] (row %d) has gradient %v, want exactly 0", s.Name, i, i/C, gs[i])
			}
		}
		scale := 0.0
		for _, v := range gs[:live] {
			scale = max(scale, math.Abs(float64(v)))
		}
		if scale == 0 {
			t.Fatalf("%s: gradient is all zero", s.Name)
		}
		maxAbs, maxRel := 0.0, 0.0
		n := min(samples, live)
		for k := range n {
			i := (k*live)/n + r.Intn(live/n) // one element per stratum, all when live <= samples
			x := p64[off+i]
			p64[off+i] = x + h
			lp := refLoss()
			p64[off+i] = x - h
			lm := refLoss()
			p64[off+i] = x
			fd := (lp - lm) / (2 * h)
			diff := math.Abs(float64(gs[i]) - fd)
			rel := diff / max(math.Abs(fd), 1e-2*scale)
			maxAbs, maxRel = max(maxAbs, diff), max(maxRel, rel)
			if rel > 1e-3 {
				t.Errorf("%s[%d]: model %.8g, float64 finite difference %.8g (rel err %.3g)", s.Name, i, gs[i], fd, rel)
			}
		}
		worstRel = max(worstRel, maxRel)
		t.Logf("%-8s %d samples: max abs err %.3g, max rel err %.3g (max |grad| %.3g)", s.Name, n, maxAbs, maxRel, scale)
		off += s.Numel()
	}
	t.Logf("worst relative error over all 16 tensors: %.3g", worstRel)
}

// TestReferenceAdamW runs three training steps with weight decay and repeats each AdamW update
// in float64 from the same gradients, then checks the trained model's loss against the float64
// reference forward at the float64 parameters.
func TestReferenceAdamW(t *testing.T) {
	c := refCases()[0]
	cfg := c.cfg
	r := rng.New(23)
	p := refParams(cfg, 3)
	in, tg := refTokens(c.B*c.T, cfg.VocabSize, r), refTokens(c.B*c.T, cfg.VocabSize, r)
	m := newRefModel(t, c, p)
	ocfg := optim.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
	opt, err := optim.NewAdamW(m.Params, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	const lr = 1e-2
	b1, b2, eps, wd := float64(ocfg.Beta1), float64(ocfg.Beta2), float64(ocfg.Eps), float64(ocfg.WeightDecay)
	p64 := to64(p)
	m1, v1 := make([]float64, len(p)), make([]float64, len(p))
	var losses []float32
	for step := 1; step <= 3; step++ {
		m.ZeroGrad()
		tp := autograd.NewTape()
		loss, err := m.ForwardLoss(tp, in, tg, c.B, c.T)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
		if err := m.Backward(tp); err != nil {
			t.Fatal(err)
		}
		g, err := m.GradsToHost()
		if err != nil {
			t.Fatal(err)
		}
		before, _ := m.ParamsToHost()
		opt.Update(m.Params, m.Grads, lr)
		after, err := m.ParamsToHost()
		if err != nil {
			t.Fatal(err)
		}
		c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		maxDiff, maxMove := 0.0, 0.0
		for i := range p64 {
			gi := float64(g[i])
			m1[i] = b1*m1[i] + (1-b1)*gi
			v1[i] = b2*v1[i] + (1-b2)*gi*gi
			p64[i] -= lr * (m1[i]/c1/(math.Sqrt(v1[i]/c2)+eps) + wd*p64[i])
			maxDiff = max(maxDiff, math.Abs(float64(after[i])-p64[i])/max(1, math.Abs(p64[i])))
			maxMove = max(maxMove, math.Abs(float64(after[i]-before[i])))
		}
		t.Logf("step %d: loss %.6f, max param |float32 - float64| %.3g, max move %.3g", step, loss, maxDiff, maxMove)
		if maxDiff > 1e-6 {
			t.Fatalf("step %d: parameters differ from the float64 AdamW by %v (relative to max(1,|p|)), want <= 1e-6", step, maxDiff)
		}
		if maxMove < lr/2 {
			t.Fatalf("step %d: largest parameter move %v, want about lr = %v", step, maxMove, lr)
		}
	}
	loss, err := m.ForwardLoss(nil, in, tg, c.B, c.T)
	if err != nil {
		t.Fatal(err)
	}
	_, refLoss := newRef(cfg).forward(p64, in, tg, c.B, c.T)
	t.Logf("after 3 steps: loss %.7f, float64 reference %.7f (losses %v)", loss, refLoss, losses)
	if d := math.Abs(float64(loss) - refLoss); d > 1e-5 {
		t.Fatalf("loss after 3 steps %v, float64 reference %v: |diff| %v > 1e-5", loss, refLoss, d)
	}
	if !(loss < losses[0]) {
		t.Fatalf("loss %v after 3 steps is not below the first %v", loss, losses[0])
	}
}
