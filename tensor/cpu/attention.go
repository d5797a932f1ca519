package cpu

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// The generators of attention_amd64.s and attention_arm64.s are named here, in a file every
// architecture builds, so that go generate on any machine rewrites both.
//
//go:generate go run attention_gen.go
//go:generate go run attention_neon_gen.go

// attnScale is llm.c's 1.0 / sqrtf(hs), computed in double and rounded to float.
func attnScale(hs int) float32 {
	return float32(1 / float64(sqrtf(float32(hs))))
}

// Attention is computed one (batch, head) at a time from two kernels, each a set of
// independent sums that add their terms in a fixed order with separate multiplies and adds
// (as llm.c's loops do): scores (dot products of query rows with keys packed 16 to a block)
// and combine (weighted sums of rows). A sum's bits depend only on its terms and their order,
// not on how rows are blocked, so a decoding step reproduces the full forward bit for bit and
// the vector kernels reproduce the portable loops.

// attnBlock is the number of keys in a packed block: one AVX-512 register of scores.
const attnBlock = 16

// attnRows is the number of query rows the kernels take at once.
const attnRows = 4

// attnKernels is a set of vector kernels (attention_amd64.s, attention_arm64.s) for scores,
// combine and packKeys.
type attnKernels struct {
	name    string
	scores4 func(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)
	scores1 func(s, q, kt *float32, hs, nblk int)
	comb4   func(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)
	comb1   func(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)
	pack    func(dst, src *float32, stride, hs int) // nil: the portable loop
}

// attnActive is the best kernel set this CPU has, or nil; every set gives the portable loops'
// bits (tests switch between them to compare).
var attnActive = func() *attnKernels {
	if len(attnKernelSets) > 0 {
		return attnKernelSets[0]
	}
	return nil
}()

// attnKernelsFor returns the vector kernels for heads of hs values (a multiple of 16), or nil
// for the portable loops.
func attnKernelsFor(hs int) *attnKernels {
	if hs > 0 && hs%attnBlock == 0 {
		return attnActive
	}
	return nil
}

// keyBlocks is the number of packed blocks holding n keys.
func keyBlocks(n int) int { return (n + attnBlock - 1) / attnBlock }

// packKeys stores n keys (key t2 at k[t2*stride:], hs values each) as blocks of 16 keys laid
// out value-major, kt[(blk*hs+i)*16+j] = key blk*16+j's value i, zero past n, so that one
// vector load holds value i of sixteen keys. A partly filled last block goes through pad
// (attnBlock*hs floats) when one is given, else through the portable loop.
func packKeys(kt, k, pad []float32, n, stride, hs int, kern *attnKernels) {
	nb := keyBlocks(n)
	kt = kt[:nb*hs*attnBlock]
	for blk := 0; blk < nb; blk++ {
		dst := kt[blk*hs*attnBlock : (blk+1)*hs*attnBlock]
		if kern != nil && kern.pack != nil && (blk+1)*attnBlock <= n {
			_ = k[(blk*attnBlock+attnBlock-1)*stride+hs-1]
			kern.pack(&dst[0], &k[blk*attnBlock*stride], stride, hs)
			continue
		}
		if kern != nil && kern.pack != nil && pad != nil {
			packPartialBlock(dst, k[blk*attnBlock*stride:], pad, n-blk*attnBlock, stride, hs, kern)
			continue
		}
		for j := 0; j < attnBlock; j++ {
			t2 := blk*attnBlock + j
			if t2 >= n {
				for i := 0; i < hs; i++ {
					dst[i*attnBlock+j] = 0
				}
				continue
			}
			src := k[t2*stride : t2*stride+hs]
			for i, x := range src {
				dst[i*attnBlock+j] = x
			}
		}
	}
}

// packPartialBlock packs the last, partly filled block of m < 16 keys with the vector kernel,
// through pad (16*hs floats): the keys are copied there and the rest of it cleared first.
// Decoding packs every head's keys each step and its last block is rarely full, so the scalar
// transpose was most of its time.
func packPartialBlock(dst, k, pad []float32, m, stride, hs int, kern *attnKernels) {
	pad = pad[:attnBlock*hs]
	for j := 0; j < m; j++ {
		copy(pad[j*hs:(j+1)*hs], k[j*stride:j*stride+hs])
	}
	clear(pad[m*hs:])
	kern.pack(&dst[0], &pad[0], hs, hs)
}

// scores sets s[r*ss+t2] = sum over i of q[r*qs+i]*key t2's value i for rows r < nr and keys
// t2 < nblk*16 packed by packKeys, adding in order of i.
func scores(s []float32, ss int, q []float32, qs, nr int, kt []float32, hs, nblk int, kern *attnKernels) {
	if nr == 0 || nblk == 0 {
		return
	}
	_, _, _ = s[(nr-1)*ss+nblk*attnBlock-1], q[(nr-1)*qs+hs-1], kt[nblk*hs*attnBlock-1]
	if kern != nil && nr == attnRows {
		kern.scores4(&s[0], ss, &q[0], qs, &kt[0], hs, nblk)
		return
	}
	for r := 0; r < nr; r++ {
		if kern != nil {
			kern.scores1(&s[r*ss], &q[r*qs], &kt[0], hs, nblk)
			continue
		}
		qr := q[r*qs : r*qs+hs]
		for blk := 0; blk < nblk; blk++ {
			var acc [attnBlock]float32
			kb := kt[blk*hs*attnBlock : (blk+1)*hs*attnBlock]
			for i, qi := range qr {
				kv := kb[i*attnBlock : (i+1)*attnBlock]
				for j := range acc {
					acc[j] += float32(qi * kv[j])
				}
			}
			copy(s[r*ss+blk*attnBlock:], acc[:])
		}
	}
}

// combine sets (or, with accumulate, adds to) out[r*os+i], for rows r < nr and i < hs, the
// sum over j < n of w[r*ws+j*wstep]*x[j*xs+i], adding in order of j.
func combine(out []float32, os, nr int, w []float32, ws, wstep int, x []float32, xs, n, hs int, accumulate bool, kern *attnKernels) {
	if nr == 0 {
		return
	}
	_ = out[(nr-1)*os+hs-1]
	if n == 0 {
		for r := 0; r < nr && !accumulate; r++ {
			clear(out[r*os : r*os+hs])
		}
		return
	}
	_, _ = w[(nr-1)*ws+(n-1)*wstep], x[(n-1)*xs+hs-1]
	acc := 0
	if accumulate {
		acc = 1
	}
	if kern != nil && nr == attnRows {
		kern.comb4(&out[0], os, &w[0], ws, wstep, &x[0], xs, n, hs, acc)
		return
	}
	for r := 0; r < nr; r++ {
		if kern != nil {
			kern.comb1(&out[r*os], &w[r*ws], wstep, &x[0], xs, n, hs, acc)
			continue
		}
		o := out[r*os : r*os+hs]
		if !accumulate {
			clear(o)
		}
		for j := 0; j < n; j++ {
			a := w[r*ws+j*wstep]
			xj := x[j*xs : j*xs+hs]
			xj = xj[:len(o)]
			for i := range o {
				o[i] += float32(a * xj[i])
			}
		}
	}
}

// combineLower computes, for query positions t in [t0, t1), out[(t-t0)*os:] (+)= sum over
// j <= t of w[(t-t0)*ws+j]*x[j*xs:]: a causal weighted sum over earlier positions. Rows go
// attnRows at a time over their common positions, then each row over the rest of its own.
func combineLower(out []float32, os int, w []float32, ws int, x []float32, xs, t0, t1, hs int, accumulate bool, kern *attnKernels) {
	for t := t0; t < t1; {
		nr := min(attnRows, t1-t)
		r := t - t0
		combine(out[r*os:], os, nr, w[r*ws:], ws, 1, x, xs, t+1, hs, accumulate, kern)
		for i := 1; i < nr; i++ {
			combine(out[(r+i)*os:], os, 1, w[(r+i)*ws+t+1:], ws, 1, x[(t+1)*xs:], xs, i, hs, true, kern)
		}
		t += nr
	}
}

// combineUpper computes, for positions t2 < T, out[t2*os:] += sum over j >= t2 (j < T) of
// w[j*ws+t2]*x[j*xs:]: the transpose of combineLower, as gradients flow from later queries
// back to the keys and values they attended to. Each block of rows first adds the positions
// only some of its rows see, in order, then their common positions.
func combineUpper(out []float32, os int, w []float32, ws int, x []float32, xs, T, hs int, kern *attnKernels) {
	for t2 := 0; t2 < T; {
		nr := min(attnRows, T-t2)
		last := t2 + nr - 1
		for i := 0; i < nr-1; i++ {
			combine(out[(t2+i)*os:], os, 1, w[(t2+i)*ws+t2+i:], 1, ws, x[(t2+i)*xs:], xs, last-(t2+i), hs, true, kern)
		}
		combine(out[t2*os:], os, nr, w[last*ws+t2:], 1, ws, x[last*xs:], xs, T-last, hs, true, kern)
		t2 += nr
	}
}

// softmaxRow sets att to the softmax of s*scale over len(att) scores, following llm.c's
// attention_forward: scale, max subtraction, exp, normalise.
func softmaxRow(att, s []float32, scale float32) {
	s = s[:len(att)]
	maxv := float32(math.Inf(-1))
	for t2, v := range s {
		val := v * scale
		maxv = max(maxv, val)
		att[t2] = val
	}
	sum := expShiftSum(att, att, maxv)
	var inv float32
	if sum != 0 {
		inv = 1 / sum
	}
	for t2 := range att {
		att[t2] *= inv
	}
}

// attendRows computes causal attention for the queries at positions t0..t1-1 (query row r
// at q[r*qs:], output at out[r*os:], probabilities written to att[r*as:]) over keys 0..t,
// packed by packKeys, and values v[t2*vs:]. tmp holds attnRows*keyBlocks(t1)*16 scores.
func attendRows(out []float32, os int, att []float32, as int, q []float32, qs int, kt, v []float32, vs, hs, t0, t1 int, scale float32, tmp []float32, kern *attnKernels) {
	for t := t0; t < t1; {
		nr := min(attnRows, t1-t)
		r := t - t0
		nb := keyBlocks(t + nr)
		ss := nb * attnBlock
		scores(tmp, ss, q[r*qs:], qs, nr, kt, hs, nb, kern)
		for i := 0; i < nr; i++ {
			softmaxRow(att[(r+i)*as:(r+i)*as+t+i+1], tmp[i*ss:], scale)
		}
		t += nr
	}
	combineLower(out, os, att, as, v, vs, t0, t1, hs, false, kern)
}

// attnScratch is the per-worker scratch of the attention jobs over T positions: packed keys
// (or values), attnRows rows of scores and, with grads, a T x T matrix.
func attnScratch(T, hs int, grads bool) int {
	n := keyBlocks(T)*hs*attnBlock + attnRows*keyBlocks(T)*attnBlock
	if grads {
		n += T * T
	}
	return n
}

type attFwdJob struct {
	B, T, C, NH   int
	out, att, qkv []float32
	scale         float32
	kern          *attnKernels
	scratch       [][]float32
}

func (j *attFwdJob) run(w, bh int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	b, h := bh/NH, bh%NH
	base := b*T*C3 + h*hs
	nk := keyBlocks(T) * hs * attnBlock
	kt, tmp := j.scratch[w][:nk], j.scratch[w][nk:]
	packKeys(kt, j.qkv[base+C:], nil, T, C3, hs, j.kern)
	att := j.att[bh*T*T : (bh+1)*T*T]
	attendRows(j.out[b*T*C+h*hs:], C, att, T, j.qkv[base:], C3, kt, j.qkv[base+2*C:], C3, hs, 0, T, j.scale, tmp, j.kern)
	for t := 0; t < T; t++ {
		clear(att[t*T+t+1 : (t+1)*T])
	}
}

func checkHeads(op string, C, NH int) {
	if NH <= 0 || C%NH != 0 {
		panic(fmt.Sprintf("cpu: %s: C=%d not divisible into NH=%d heads", op, C, NH))
	}
}

// AttentionForward implements tensor.Backend. Each (batch, head) is independent.
func (b *Backend) AttentionForward(out, att, qkv *tensor.Tensor, B, T, C, NH int) {
	defer b.unlock(b.lock("AttentionForward"))
	const op = "AttentionForward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	hs := C / NH
	b.workerScratch(attnScratch(T, hs, false))
	b.attF = attFwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(hs), kern: attnKernelsFor(hs), scratch: b.scratch,
		out: f32(op, "out", out, B*T*C), att: f32(op, "att", att, B*NH*T*T), qkv: f32(op, "qkv", qkv, B*T*3*C)}
	b.pool.doWork(&b.attF, B*NH, B*NH*T*(T+1)*hs)
	b.attF = attFwdJob{}
}

// attBwdJob handles one (batch, head) per chunk. Every gradient sum runs over positions in
// order, as in llm.c. The softmax backward uses the O(T) identity
// dpre[t3] = att[t3] * (datt[t3] - sum_t2 att[t2] datt[t2]) instead of llm.c's O(T^2) loop.
type attBwdJob struct {
	B, T, C, NH int
	dqkv, datts []float32
	dout        []float32
	qkv, att    []float32
	scale       float32
	kern        *attnKernels
	scratch     [][]float32
}

func (j *attBwdJob) run(w, bh int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	b, h := bh/NH, bh%NH
	base := b*T*C3 + h*hs
	nk := keyBlocks(T) * hs * attnBlock
	nt := attnRows * keyBlocks(T) * attnBlock
	sc := j.scratch[w]
	vt, tmp, ds := sc[:nk], sc[nk:nk+nt], sc[nk+nt:nk+nt+T*T]
	q, k, v := j.qkv[base:], j.qkv[base+C:], j.qkv[base+2*C:]
	dq, dk, dv := j.dqkv[base:], j.dqkv[base+C:], j.dqkv[base+2*C:]
	dout := j.dout[b*T*C+h*hs:]
	att, datts := j.att[bh*T*T:(bh+1)*T*T], j.datts[bh*T*T:(bh+1)*T*T]

	// datt = dout·vᵀ, then the softmax backward, row by row.
	packKeys(vt, v, nil, T, C3, hs, j.kern)
	for t := 0; t < T; {
		nr := min(attnRows, T-t)
		nb := keyBlocks(t + nr)
		ss := nb * attnBlock
		scores(tmp, ss, dout[t*C:], C, nr, vt, hs, nb, j.kern)
		for i := 0; i < nr; i++ {
			tt := t + i
			a := att[tt*T : tt*T+tt+1]
			datt := datts[tt*T : (tt+1)*T]
			copy(datt, tmp[i*ss:i*ss+tt+1])
			clear(datt[tt+1:])
			datt = datt[:len(a)]
			var dot float32
			for t2, av := range a {
				dot += float32(av * datt[t2])
			}
			for t2, av := range a {
				datt[t2] = av * (datt[t2] - dot)
			}
			dsr := ds[tt*T : tt*T+tt+1]
			for t2, d := range datt {
				dsr[t2] = d * j.scale
			}
		}
		t += nr
	}
	combineUpper(dv, C3, att, T, dout, C, T, hs, j.kern)       // dv[t2] += Σ_t att[t][t2]·dout[t]
	combineLower(dq, C3, ds, T, k, C3, 0, T, hs, true, j.kern) // dq[t] += Σ_t2 ds[t][t2]·k[t2]
	combineUpper(dk, C3, ds, T, q, C3, T, hs, j.kern)          // dk[t2] += Σ_t ds[t][t2]·q[t]
}

// AttentionSaved implements tensor.Backend: the forward saves the B*NH*T*T probabilities and
// the backward's scratch receives the gradient of the pre-softmax scores, as large.
func (b *Backend) AttentionSaved(B, T, NH int) (att, scratch int) {
	return B * NH * T * T, B * NH * T * T
}

// AttentionBackward implements tensor.Backend. scratch receives the gradient of the
// pre-softmax scores; out is not needed, the probabilities being saved.
func (b *Backend) AttentionBackward(dqkv, scratch, dout, qkv, _, att *tensor.Tensor, B, T, C, NH int) {
	defer b.unlock(b.lock("AttentionBackward"))
	const op = "AttentionBackward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	hs := C / NH
	b.workerScratch(attnScratch(T, hs, true))
	b.attB = attBwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(hs), kern: attnKernelsFor(hs), scratch: b.scratch,
		dqkv: f32(op, "dqkv", dqkv, B*T*3*C), datts: f32(op, "scratch", scratch, B*NH*T*T),
		dout: f32(op, "dout", dout, B*T*C), qkv: f32(op, "qkv", qkv, B*T*3*C), att: f32(op, "att", att, B*NH*T*T)}
	b.pool.doWork(&b.attB, B*NH, 2*B*NH*T*(T+1)*hs)
	b.attB = attBwdJob{}
}

// attDecJob handles one (batch, head) per chunk: the new queries attend to the cache through
// the forward's own row code, so each output equals the full-sequence forward bit for bit.
type attDecJob struct {
	B, Tq, pos, maxT, C, NH int
	out, kc, vc, qkv        []float32
	scale                   float32
	kern                    *attnKernels
	scratch                 [][]float32
}

func (j *attDecJob) run(w, bh int) {
	Tq, C, NH := j.Tq, j.C, j.NH
	hs := C / NH
	b, h := bh/NH, bh%NH
	n := j.pos + Tq
	cb := b*j.maxT*C + h*hs
	nk := keyBlocks(n) * hs * attnBlock
	nt := attnRows * keyBlocks(n) * attnBlock
	sc := j.scratch[w]
	kt, tmp, att := sc[:nk], sc[nk:nk+nt], sc[nk+nt:nk+nt+Tq*n]
	pad := sc[nk+nt+Tq*n:]
	packKeys(kt, j.kc[cb:], pad, n, C, hs, j.kern)
	attendRows(j.out[b*Tq*C+h*hs:], C, att, n, j.qkv[b*Tq*3*C+h*hs:], 3*C, kt, j.vc[cb:], C, hs, j.pos, n, j.scale, tmp, j.kern)
}

// AttentionDecode implements tensor.Backend.
func (b *Backend) AttentionDecode(out, kcache, vcache, qkv *tensor.Tensor, B, Tq, pos, maxT, C, NH int) {
	defer b.unlock(b.lock("AttentionDecode"))
	const op = "AttentionDecode"
	dims(op, B, Tq, pos, maxT, C)
	checkHeads(op, C, NH)
	if pos+Tq > maxT {
		panic(fmt.Sprintf("cpu: %s: positions %d..%d past cache length %d", op, pos, pos+Tq-1, maxT))
	}
	x := f32(op, "qkv", qkv, B*Tq*3*C)
	kc := f32(op, "kcache", kcache, B*maxT*C)
	vc := f32(op, "vcache", vcache, B*maxT*C)
	for bb := 0; bb < B; bb++ {
		for t := 0; t < Tq; t++ {
			src := x[(bb*Tq+t)*3*C:]
			dst := (bb*maxT + pos + t) * C
			copy(kc[dst:dst+C], src[C:2*C])
			copy(vc[dst:dst+C], src[2*C:3*C])
		}
	}
	hs, n := C/NH, pos+Tq
	b.workerScratch(attnScratch(n, hs, false) + Tq*n + attnBlock*hs)
	b.attD = attDecJob{B: B, Tq: Tq, pos: pos, maxT: maxT, C: C, NH: NH, scale: attnScale(hs), kern: attnKernelsFor(hs),
		out: f32(op, "out", out, B*Tq*C), kc: kc, vc: vc, qkv: x, scratch: b.scratch}
	b.pool.doWork(&b.attD, B*NH, 2*B*Tq*n*C)
	b.attD = attDecJob{}
}

// packRow writes row r of the packed q|k|v with each KV head repeated H/KV times.
func packRow(j *llamaJob, r int) {
	H, KV, D := j.H, j.KV, j.D
	qw, kw := H*D, KV*D
	out := j.out[r*3*qw : (r+1)*3*qw]
	copy(out[:qw], j.q[r*qw:(r+1)*qw])
	for h := range H {
		g := h / (H / KV)
		copy(out[qw+h*D:qw+(h+1)*D], j.k[r*kw+g*D:r*kw+(g+1)*D])
		copy(out[2*qw+h*D:2*qw+(h+1)*D], j.v[r*kw+g*D:r*kw+(g+1)*D])
	}
}

// unpackRow accumulates row r of dqkv into dq, dk and dv: each KV head's H/KV copies are
// summed in head order, then added (as the Vulkan kernel does, so the bits agree).
func unpackRow(j *llamaJob, r int) {
	H, KV, D := j.H, j.KV, j.D
	qw, kw, rep := H*D, KV*D, H/KV
	in := j.dout[r*3*qw : (r+1)*3*qw]
	addTo(j.dq[r*qw:(r+1)*qw], in[:qw])
	var buf [256]float32
	for part, dst := range [2][]float32{j.dk[r*kw : (r+1)*kw], j.dv[r*kw : (r+1)*kw]} {
		src := in[(part+1)*qw : (part+2)*qw]
		for g := range KV {
			copies := src[g*rep*D : (g+1)*rep*D]
			for lo := 0; lo < D; lo += len(buf) {
				hi := min(lo+len(buf), D)
				sum := buf[:hi-lo]
				copy(sum, copies[lo:hi])
				for c := 1; c < rep; c++ {
					addTo(sum, copies[c*D+lo:c*D+hi])
				}
				addTo(dst[g*D+lo:g*D+hi], sum)
			}
		}
	}
}

func packArgs(op string, N, H, KV, D int) {
	dims(op, N, H, KV, D)
	if KV == 0 || H%KV != 0 {
		panic(fmt.Sprintf("cpu: %s: %d query heads are not a multiple of %d KV heads", op, H, KV))
	}
}

// PackQKV implements tensor.Backend.
func (b *Backend) PackQKV(qkv, q, k, v *tensor.Tensor, N, H, KV, D int) {
	defer b.unlock(b.lock("PackQKV"))
	const op = "PackQKV"
	packArgs(op, N, H, KV, D)
	if N*H*D == 0 {
		return
	}
	b.llama = llamaJob{kind: packForward, n: N, rows: rowsPer(3 * H * D), H: H, KV: KV, D: D,
		out: f32(op, "qkv", qkv, 3*N*H*D), q: f32(op, "q", q, N*H*D), k: f32(op, "k", k, N*KV*D), v: f32(op, "v", v, N*KV*D)}
	b.runLlama(true)
}

// PackQKVBackward implements tensor.Backend.
func (b *Backend) PackQKVBackward(dq, dk, dv, dqkv *tensor.Tensor, N, H, KV, D int) {
	defer b.unlock(b.lock("PackQKVBackward"))
	const op = "PackQKVBackward"
	packArgs(op, N, H, KV, D)
	if N*H*D == 0 {
		return
	}
	b.llama = llamaJob{kind: packBackward, n: N, rows: rowsPer(3 * H * D), H: H, KV: KV, D: D,
		dout: f32(op, "dqkv", dqkv, 3*N*H*D), dq: f32(op, "dq", dq, N*H*D), dk: f32(op, "dk", dk, N*KV*D), dv: f32(op, "dv", dv, N*KV*D)}
	b.runLlama(true)
}
