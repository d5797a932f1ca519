package cpu

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

type xentJob struct {
	backward, fused bool
	dloss           float32 // fused: every row's loss gradient
	N, V, Vp, rows  int
	losses, probs   []float32
	logits, dlogits []float32
	dlosses         []float32
	targets         []int32
}

func (j *xentJob) run(_, c int) {
	lo := c * j.rows
	hi := min(lo+j.rows, j.N)
	V, Vp := j.V, j.Vp
	for r := lo; r < hi; r++ {
		probs := j.probs[r*Vp : (r+1)*Vp]
		ix := int(j.targets[r])
		if j.backward {
			// llm.c: dlogits[i] += (p[i] - [i==ix]) * dloss, the target column on its own.
			d := j.dlogits[r*Vp : r*Vp+V]
			p := probs[:V]
			dl := j.dlosses[r]
			axpy(d[:ix], p[:ix], dl)
			d[ix] += float32((p[ix] - 1) * dl)
			axpy(d[ix+1:], p[ix+1:], dl)
			continue
		}
		// llm.c's softmax_forward and crossentropy_forward.
		l := j.logits[r*Vp : r*Vp+V]
		p := probs[:V]
		sum := expShiftSum(p, l, maxf32(l))
		clear(probs[V:])
		t := p[ix] / sum // the target's probability, as the division below gives it
		j.losses[r] = -logf(t)
		if !j.fused {
			divScalar(p, sum)
			continue
		}
		// The backward into zeroed dlogits, in place: 0 + g*dl is g*dl.
		divScale(p, sum, j.dloss)
		p[ix] = (t - 1) * j.dloss
	}
}

func checkTargets(op string, tg []int32, V int) {
	for i, t := range tg {
		if t < 0 || int(t) >= V {
			panic(fmt.Sprintf("cpu: %s: target %d of row %d outside [0,%d)", op, t, i, V))
		}
	}
}

func checkVocab(op string, V, Vp int) {
	if V < 1 || V > Vp {
		panic(fmt.Sprintf("cpu: %s: V=%d must be in [1, Vp=%d]", op, V, Vp))
	}
}

// CrossEntropyForward implements tensor.Backend.
func (b *Backend) CrossEntropyForward(losses, probs, logits, targets *tensor.Tensor, N, V, Vp int) {
	defer b.unlock(b.lock("CrossEntropyForward"))
	b.crossEntropy("CrossEntropyForward", "probs", xentJob{}, losses, probs, logits, targets, N, V, Vp)
}

// CrossEntropyFused implements tensor.Backend: the forward writes its probabilities into
// dlogits, and each row is turned into its gradient in place while it is in cache.
func (b *Backend) CrossEntropyFused(losses, dlogits, logits, targets *tensor.Tensor, N, V, Vp int, dloss float32) {
	defer b.unlock(b.lock("CrossEntropyFused"))
	b.crossEntropy("CrossEntropyFused", "dlogits", xentJob{fused: true, dloss: dloss}, losses, dlogits, logits, targets, N, V, Vp)
}

// crossEntropy runs the forward job j over N rows, its probabilities (or, fused, gradients)
// going to out, named outName in errors.
func (b *Backend) crossEntropy(op, outName string, j xentJob, losses, out, logits, targets *tensor.Tensor, N, V, Vp int) {
	dims(op, N)
	checkVocab(op, V, Vp)
	tg := i32(op, "targets", targets, N)
	checkTargets(op, tg, V)
	j.N, j.V, j.Vp, j.rows, j.targets = N, V, Vp, rowsPer(3*Vp), tg
	j.losses, j.probs, j.logits = f32(op, "losses", losses, N), f32(op, outName, out, N*Vp), f32(op, "logits", logits, N*Vp)
	b.xent = j
	b.pool.do(&b.xent, ceilDiv(N, b.xent.rows))
	b.xent = xentJob{}
}

// CrossEntropyBackward implements tensor.Backend.
func (b *Backend) CrossEntropyBackward(dlogits, probs, targets, dlosses *tensor.Tensor, N, V, Vp int) {
	defer b.unlock(b.lock("CrossEntropyBackward"))
	const op = "CrossEntropyBackward"
	dims(op, N)
	checkVocab(op, V, Vp)
	tg := i32(op, "targets", targets, N)
	checkTargets(op, tg, V)
	b.xent = xentJob{backward: true, N: N, V: V, Vp: Vp, rows: rowsPer(2 * Vp), targets: tg,
		dlogits: f32(op, "dlogits", dlogits, N*Vp), probs: f32(op, "probs", probs, N*Vp), dlosses: f32(op, "dlosses", dlosses, N)}
	b.pool.do(&b.xent, ceilDiv(N, b.xent.rows))
	b.xent = xentJob{}
}

// lsgJob computes log-softmax at a temperature, gathered at the targets, with the entropy.
// Its row sums run in float64: the RL losses compare log-probs of the same tokens from two
// passes and the entropy is a small difference of 50k-term sums, so float32 sums lose digits.
// cut, when set, truncates each row to the columns whose logit is at least the row's cutoff
// (and the target): see lsgRowCut.
type lsgJob struct {
	backward        bool
	N, V, Vp, rows  int
	invT            float64
	logp, ent       []float32
	logits, dlogits []float32
	dlogp, dent     []float32
	cut             []float32
	targets         []int32
	scratch         [][]float64
}

// lsgRow sets e[i] = exp(z_i - zmax) for z = l*invT and returns zmax, the normaliser S = sum e,
// log S and the entropy H = log S - sum(e (z - zmax)) / S.
func lsgRow(l []float32, invT float64, e []float64) (zmax, S, logZ, H float64) {
	e = e[:len(l)]
	// invT > 0, so the largest logit gives the largest z.
	zmax = float64(float64(maxf32(l)) * invT) // rounded: arm64 would fuse it into each x*invT - zmax
	// Four partial sums each, element i going to sum i mod 4 (then the tail to the first):
	// fixed, so deterministic, and four independent chains. The vector kernel does the same.
	var sums [8]float64
	// Each product is rounded before it is added (float64(...)): on arm64 the compiler would
	// fuse it into a multiply-add, and the bits would differ from amd64's (.ci/run checks).
	i := lsgStatsVec(l, e, invT, zmax, &sums)
	for k, v := range l[i:] {
		e[i+k] = float64(float64(v)*invT) - zmax
	}
	expSlice(e[i:])
	s0, s1, s2, s3 := sums[0], sums[1], sums[2], sums[3]
	a0, a1, a2, a3 := sums[4], sums[5], sums[6], sums[7]
	for ; i+4 <= len(l); i += 4 {
		e0, e1, e2, e3 := e[i], e[i+1], e[i+2], e[i+3]
		s0 += e0
		s1 += e1
		s2 += e2
		s3 += e3
		a0 += float64(e0 * (float64(float64(l[i])*invT) - zmax))
		a1 += float64(e1 * (float64(float64(l[i+1])*invT) - zmax))
		a2 += float64(e2 * (float64(float64(l[i+2])*invT) - zmax))
		a3 += float64(e3 * (float64(float64(l[i+3])*invT) - zmax))
	}
	for ; i < len(l); i++ {
		s0 += e[i]
		a0 += float64(e[i] * (float64(float64(l[i])*invT) - zmax))
	}
	S = (s0 + s1) + (s2 + s3)
	logZ = math.Log(S)
	return zmax, S, logZ, logZ - ((a0+a1)+(a2+a3))/S
}

// lsgRowCut is lsgRow over the kept columns K = {i : l[i] >= cut} ∪ {ix} only: zmax is the
// largest kept z, e[i] = 0 exactly outside K, and S and the entropy sum only kept terms (an
// excluded column adds nothing, so no 0·log 0 and no NaN). Only kept columns are
// exponentiated (a top-k set is a few of 50k), with lsgRow's lanes and order for the sums, so
// a cutoff that keeps every column gives lsgRow's bits.
func lsgRowCut(l []float32, invT float64, e []float64, cut float32, ix int) (zmax, S, logZ, H float64) {
	e = e[:len(l)]
	top := l[ix]
	for _, v := range l {
		if v >= cut && v > top {
			top = v
		}
	}
	zmax = float64(float64(top) * invT)
	clear(e)
	var k keptSums
	k.tail = len(l) &^ 3 // lsgRow's vector part: element i in lane i mod 4; the tail in lane 0
	for i, v := range l {
		if v >= cut || i == ix {
			k.x[k.n], k.idx[k.n] = float64(float64(v)*invT)-zmax, i
			if k.n++; k.n == expBlock {
				k.flush(e, l, invT, zmax)
			}
		}
	}
	k.flush(e, l, invT, zmax)
	S = (k.s[0] + k.s[1]) + (k.s[2] + k.s[3])
	logZ = math.Log(S)
	return zmax, S, logZ, logZ - ((k.a[0]+k.a[1])+(k.a[2]+k.a[3]))/S
}

// keptSums exponentiates kept columns a block at a time and adds them to lsgRow's lanes.
type keptSums struct {
	x    [expBlock]float64 // z - zmax, then its exponential
	idx  [expBlock]int
	n    int
	tail int
	s, a [4]float64
}

func (k *keptSums) flush(e []float64, l []float32, invT, zmax float64) {
	x := k.x[:k.n]
	expSlice(x)
	for j, ex := range x {
		i := k.idx[j]
		e[i] = ex
		lane := i & 3
		if i >= k.tail {
			lane = 0
		}
		k.s[lane] += ex
		k.a[lane] += float64(ex * (float64(float64(l[i])*invT) - zmax))
	}
	k.n = 0
}

func (j *lsgJob) run(w, c int) {
	lo := c * j.rows
	hi := min(lo+j.rows, j.N)
	V, Vp := j.V, j.Vp
	e := j.scratch[w][:V]
	for r := lo; r < hi; r++ {
		l := j.logits[r*Vp : r*Vp+V]
		ix := int(j.targets[r])
		var zmax, S, logZ, H float64
		if j.cut != nil && !math.IsInf(float64(j.cut[r]), -1) {
			zmax, S, logZ, H = lsgRowCut(l, j.invT, e, j.cut[r], ix)
		} else {
			zmax, S, logZ, H = lsgRow(l, j.invT, e)
		}
		if !j.backward {
			j.logp[r] = float32(float64(float64(l[ix])*j.invT) - zmax - logZ)
			if j.ent != nil {
				j.ent[r] = float32(H)
			}
			continue
		}
		// d logp_t/dz_i = [i==t] - p_i;  dH/dz_i = -p_i (log p_i + H); dz/dlogits = 1/T.
		// Outside a truncated row's kept set e_i = 0, so p_i = 0 and the gradient added is 0.
		dlp := float64(j.dlogp[r])
		var de float64
		if j.dent != nil {
			de = float64(j.dent[r])
		}
		d := j.dlogits[r*Vp : r*Vp+V]
		invS := 1 / S
		c := [7]float64{j.invT, zmax, logZ, invS, -dlp, de, H}
		j.grad(d[:ix], l[:ix], e[:ix], &c)
		j.grad(d[ix+1:], l[ix+1:], e[ix+1:], &c)
		lp := float64(float64(l[ix])*j.invT) - zmax - logZ
		p := e[ix] * invS
		d[ix] += float32((float64(-dlp*p) - float64(float64(de*p)*(lp+H)) + dlp) * j.invT)
	}
}

// grad accumulates the gradient into d for columns other than the target; c holds invT,
// zmax, logZ, 1/S, -dlogp, dentropy and H.
func (j *lsgJob) grad(d, l []float32, e []float64, c *[7]float64) {
	n := lsgGradVec(d, l, e, c)
	invT, zmax, logZ, invS, ndlp, de, H := c[0], c[1], c[2], c[3], c[4], c[5], c[6]
	d, e = d[:len(l)], e[:len(l)]
	for i := n; i < len(l); i++ {
		lp := float64(float64(l[i])*invT) - zmax - logZ
		p := e[i] * invS
		g := float64(ndlp*p) - float64(float64(de*p)*(lp+H))
		d[i] += float32(g * invT)
	}
}

func (b *Backend) lsgCommon(op string, targets, cutoff *tensor.Tensor, N, V, Vp int, temperature float32) ([]int32, []float32) {
	dims(op, N)
	checkVocab(op, V, Vp)
	if !(temperature > 0) || math.IsInf(float64(temperature), 0) {
		panic(fmt.Sprintf("cpu: %s: temperature %v, want a positive finite value", op, temperature))
	}
	tg := i32(op, "targets", targets, N)
	checkTargets(op, tg, V)
	if cutoff == nil {
		return tg, nil
	}
	cut := f32(op, "cutoff", cutoff, N)
	for i, c := range cut {
		if c != c {
			panic(fmt.Sprintf("cpu: %s: cutoff of row %d is NaN (-Inf keeps every column)", op, i))
		}
	}
	return tg, cut
}

// LogSoftmaxGather implements tensor.Backend.
func (b *Backend) LogSoftmaxGather(logp, entropy, logits, targets, cutoff *tensor.Tensor, N, V, Vp int, temperature float32) {
	defer b.unlock(b.lock("LogSoftmaxGather"))
	const op = "LogSoftmaxGather"
	tg, cut := b.lsgCommon(op, targets, cutoff, N, V, Vp, temperature)
	b.workerScratch64(V)
	b.lsg = lsgJob{N: N, V: V, Vp: Vp, rows: rowsPer(3 * V), invT: 1 / float64(temperature), targets: tg, cut: cut, scratch: b.scratch64,
		logp: f32(op, "logp", logp, N), logits: f32(op, "logits", logits, N*Vp)}
	if entropy != nil {
		b.lsg.ent = f32(op, "entropy", entropy, N)
	}
	b.pool.do(&b.lsg, ceilDiv(N, b.lsg.rows))
	b.lsg = lsgJob{}
}

// LogSoftmaxGatherBackward implements tensor.Backend.
func (b *Backend) LogSoftmaxGatherBackward(dlogits, logits, targets, cutoff, dlogp, dentropy *tensor.Tensor, N, V, Vp int, temperature float32) {
	defer b.unlock(b.lock("LogSoftmaxGatherBackward"))
	const op = "LogSoftmaxGatherBackward"
	tg, cut := b.lsgCommon(op, targets, cutoff, N, V, Vp, temperature)
	b.workerScratch64(V)
	b.lsg = lsgJob{backward: true, N: N, V: V, Vp: Vp, rows: rowsPer(5 * V), invT: 1 / float64(temperature), targets: tg, cut: cut, scratch: b.scratch64,
		dlogits: f32(op, "dlogits", dlogits, N*Vp), logits: f32(op, "logits", logits, N*Vp), dlogp: f32(op, "dlogp", dlogp, N)}
	if dentropy != nil {
		b.lsg.dent = f32(op, "dentropy", dentropy, N)
	}
	b.pool.do(&b.lsg, ceilDiv(N, b.lsg.rows))
	b.lsg = lsgJob{}
}

// divScaleLoop sets x[i] = (x[i] / s) * a, the division and the product each rounded.
func divScaleLoop(x []float32, s, a float32) {
	for i := range x {
		x[i] = float32(x[i]/s) * a
	}
}
