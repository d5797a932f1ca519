package cpu

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// attnScale is llm.c's 1.0 / sqrtf(hs), computed in double and rounded to float.
func attnScale(hs int) float32 {
	return float32(1 / float64(sqrtf(float32(hs))))
}

// attendRow computes one query's causal attention over n = len(att) keys, following llm.c's
// attention_forward: scaled dot products, max subtraction, exp, normalise, weighted values.
// Keys and values of position t2 start at k[t2*stride] and v[t2*stride].
func attendRow(out, att, q, k, v []float32, stride int, scale float32) {
	hs := len(q)
	out = out[:hs]
	maxv := float32(math.Inf(-1))
	n := len(att)
	t2 := 0
	// Four keys at a time: four independent sums, each in llm.c's order.
	for ; t2+4 <= n; t2 += 4 {
		o := t2 * stride
		k0 := k[o : o+hs]
		k1 := k[o+stride : o+stride+hs]
		k2 := k[o+2*stride : o+2*stride+hs]
		k3 := k[o+3*stride : o+3*stride+hs]
		k0, k1, k2, k3 = k0[:len(q)], k1[:len(q)], k2[:len(q)], k3[:len(q)] // bounds-check hints
		var s0, s1, s2, s3 float32
		for i, qi := range q {
			s0 += qi * k0[i]
			s1 += qi * k1[i]
			s2 += qi * k2[i]
			s3 += qi * k3[i]
		}
		a := att[t2 : t2+4 : t2+4]
		a[0], a[1], a[2], a[3] = s0*scale, s1*scale, s2*scale, s3*scale
		maxv = max(maxv, a[0], a[1], a[2], a[3])
	}
	for ; t2 < n; t2++ {
		kt := k[t2*stride : t2*stride+hs]
		kt = kt[:len(q)]
		var val float32
		for i, qi := range q {
			val += qi * kt[i]
		}
		val *= scale
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
	if useAttnVector(hs) {
		_ = v[(n-1)*stride+hs-1]
		attnAVAVX2(&out[0], &att[0], &v[0], stride, n, hs)
		return
	}
	clear(out)
	// Four values per pass over out; each out[i] still adds positions in order.
	t2 = 0
	for ; t2+4 <= n; t2 += 4 {
		o := t2 * stride
		v0 := v[o : o+hs]
		v1 := v[o+stride : o+stride+hs]
		v2 := v[o+2*stride : o+2*stride+hs]
		v3 := v[o+3*stride : o+3*stride+hs]
		v0, v1, v2, v3 = v0[:len(out)], v1[:len(out)], v2[:len(out)], v3[:len(out)]
		a0, a1, a2, a3 := att[t2], att[t2+1], att[t2+2], att[t2+3]
		for i, acc := range out {
			acc += a0 * v0[i]
			acc += a1 * v1[i]
			acc += a2 * v2[i]
			acc += a3 * v3[i]
			out[i] = acc
		}
	}
	for ; t2 < n; t2++ {
		vt := v[t2*stride : t2*stride+hs]
		vt = vt[:hs]
		a := att[t2]
		for i := range out {
			out[i] += a * vt[i]
		}
	}
}

// attnVector selects the vector kernels where the CPU has them and the head size is a multiple
// of 8; they give the same bits as the portable loops (tests switch it off to compare).
var attnVector = haveAttnAVX2

func useAttnVector(hs int) bool { return attnVector && hs > 0 && hs%8 == 0 }

// keyBlocks is the number of 8-key blocks holding n keys.
func keyBlocks(n int) int { return (n + 7) / 8 }

// packKT stores n keys (key t2 at k[t2*stride:], hs values each) as blocks of 8 keys laid out
// value-major, kt[(blk*hs+i)*8+j] = key blk*8+j's value i, zero past n, so that one vector
// load holds value i of eight keys.
func packKT(kt, k []float32, n, stride, hs int) {
	nb := keyBlocks(n)
	kt = kt[:nb*hs*8]
	for blk := 0; blk < nb; blk++ {
		dst := kt[blk*hs*8 : (blk+1)*hs*8]
		for j := 0; j < 8; j++ {
			t2 := blk*8 + j
			if t2 >= n {
				for i := 0; i < hs; i++ {
					dst[i*8+j] = 0
				}
				continue
			}
			src := k[t2*stride : t2*stride+hs]
			for i, x := range src {
				dst[i*8+j] = x
			}
		}
	}
}

// attendRowVec is attendRow with keys packed by packKT and hs a multiple of 8; tmp holds
// keyBlocks(len(att))*8 scores.
func attendRowVec(out, att, q, kt, v []float32, stride int, scale float32, tmp []float32) {
	n, hs := len(att), len(q)
	nb := keyBlocks(n)
	_, _, _ = kt[nb*hs*8-1], tmp[nb*8-1], out[hs-1]
	_ = v[(n-1)*stride+hs-1]
	dots8AVX2(&q[0], &kt[0], hs, nb, &tmp[0])
	maxv := float32(math.Inf(-1))
	for t2 := range att {
		val := tmp[t2] * scale
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
	attnAVAVX2(&out[0], &att[0], &v[0], stride, n, hs)
}

// attPackJob packs each (batch, head)'s keys for the vector forward.
type attPackJob struct {
	T, C, NH int
	qkv, kt  []float32
}

func (j *attPackJob) run(_, bh int) {
	T, C, NH := j.T, j.C, j.NH
	hs := C / NH
	b, h := bh/NH, bh%NH
	sz := keyBlocks(T) * hs * 8
	packKT(j.kt[bh*sz:(bh+1)*sz], j.qkv[b*T*3*C+C+h*hs:], T, 3*C, hs)
}

type attFwdJob struct {
	B, T, C, NH   int
	out, att, qkv []float32
	scale         float32
	kt            []float32 // packed keys, or nil for the portable loops
	scratch       [][]float32
}

func (j *attFwdJob) run(w, r int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	t := r % T
	h := (r / T) % NH
	b := r / (T * NH)
	base := b * T * C3
	att := j.att[r*T : (r+1)*T]
	clear(att[t+1:])
	if j.kt != nil {
		sz := keyBlocks(T) * hs * 8
		bh := r / T
		o := (b*T + t) * C
		attendRowVec(j.out[o+h*hs:o+(h+1)*hs], att[:t+1], j.qkv[base+t*C3+h*hs:base+t*C3+(h+1)*hs],
			j.kt[bh*sz:(bh+1)*sz], j.qkv[base+2*C+h*hs:], C3, j.scale, j.scratch[w])
		return
	}
	attendRow(j.out[(b*T+t)*C+h*hs:(b*T+t)*C+(h+1)*hs], att[:t+1],
		j.qkv[base+t*C3+h*hs:base+t*C3+(h+1)*hs], j.qkv[base+C+h*hs:], j.qkv[base+2*C+h*hs:], C3, j.scale)
}

func checkHeads(op string, C, NH int) {
	if NH <= 0 || C%NH != 0 {
		panic(fmt.Sprintf("cpu: %s: C=%d not divisible into NH=%d heads", op, C, NH))
	}
}

// AttentionForward implements tensor.Backend. Each (batch, head, position) row is independent.
func (b *Backend) AttentionForward(out, att, qkv *tensor.Tensor, B, T, C, NH int) {
	defer b.unlock(b.lock("AttentionForward"))
	const op = "AttentionForward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	b.attF = attFwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(C / NH),
		out: f32(op, "out", out, B*T*C), att: f32(op, "att", att, B*NH*T*T), qkv: f32(op, "qkv", qkv, B*T*3*C)}
	work := B * NH * T * (T + 1) * C / NH
	if hs := C / NH; useAttnVector(hs) && T > 0 {
		sz := keyBlocks(T) * hs * 8
		if len(b.attnBuf) < B*NH*sz {
			b.attnBuf = make([]float32, B*NH*sz)
		}
		b.attP = attPackJob{T: T, C: C, NH: NH, qkv: b.attF.qkv, kt: b.attnBuf}
		b.pool.doWork(&b.attP, B*NH, work)
		b.attP = attPackJob{}
		b.workerScratch(keyBlocks(T) * 8)
		b.attF.kt, b.attF.scratch = b.attnBuf, b.scratch
	}
	b.pool.doWork(&b.attF, B*NH*T, work)
	b.attF = attFwdJob{}
}

// attBwdJob handles one (batch, head) per chunk, walking positions in order so the keys' and
// values' gradients accumulate in llm.c's order. The softmax backward uses the O(T) identity
// dpre[t3] = att[t3] * (datt[t3] - sum_t2 att[t2] datt[t2]) instead of llm.c's O(T^2) loop.
type attBwdJob struct {
	B, T, C, NH int
	dqkv, datts []float32
	dout        []float32
	qkv, att    []float32
	scale       float32
	scratch     [][]float32 // per worker, for the vector kernels; nil for the portable loops
}

// runVec is run with the vector kernels: values are packed once per (batch, head) so the
// gradients of the scores are dot products of eight positions at a time. Every sum keeps the
// portable loops' order.
func (j *attBwdJob) runVec(w, b, h, bh, base int) {
	T, C := j.T, j.C
	hs, C3 := C/j.NH, 3*C
	nbT := keyBlocks(T)
	vt := j.scratch[w][:nbT*hs*8]
	tmp := j.scratch[w][nbT*hs*8 : nbT*hs*8+nbT*8]
	packKT(vt, j.qkv[base+2*C+h*hs:], T, C3, hs)
	voff, koff := base+2*C+h*hs, base+C+h*hs
	_ = j.dqkv[base+(T-1)*C3+2*C+(h+1)*hs-1]
	for t := 0; t < T; t++ {
		row := (bh*T + t) * T
		att := j.att[row : row+t+1]
		datt := j.datts[row : row+T]
		clear(datt[t+1:])
		datt = datt[:t+1]
		do := j.dout[(b*T+t)*C+h*hs : (b*T+t)*C+(h+1)*hs]
		dots8AVX2(&do[0], &vt[0], hs, keyBlocks(t+1), &tmp[0])
		copy(datt, tmp[:t+1])
		attnDVAVX2(&j.dqkv[voff], C3, &att[0], &do[0], t+1, hs)
		var dot float32
		for t2, a := range att {
			dot += a * datt[t2]
		}
		for t2, a := range att {
			datt[t2] = a * (datt[t2] - dot)
		}
		ds := tmp[:t+1]
		for t2, d := range datt {
			ds[t2] = d * j.scale
		}
		qo := base + t*C3 + h*hs
		attnDQDKAVX2(&j.dqkv[qo], &j.qkv[koff], &j.dqkv[koff], C3, &j.qkv[qo], &ds[0], t+1, hs)
	}
}

func (j *attBwdJob) run(w, bh int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	b, h := bh/NH, bh%NH
	base := b * T * C3
	if j.scratch != nil {
		j.runVec(w, b, h, bh, base)
		return
	}
	for t := 0; t < T; t++ {
		row := (bh*T + t) * T
		att := j.att[row : row+t+1]
		datt := j.datts[row : row+T]
		clear(datt[t+1:])
		datt = datt[:t+1]
		do := j.dout[(b*T+t)*C+h*hs : (b*T+t)*C+(h+1)*hs]
		t2 := 0
		for ; t2+2 <= len(att); t2 += 2 {
			// Two positions at a time for independent sums; each in llm.c's order.
			off := base + t2*C3 + 2*C + h*hs
			v0, v1 := j.qkv[off:off+hs], j.qkv[off+C3:off+C3+hs]
			dv0, dv1 := j.dqkv[off:off+hs], j.dqkv[off+C3:off+C3+hs]
			v0, v1, dv0, dv1 = v0[:len(do)], v1[:len(do)], dv0[:len(do)], dv1[:len(do)]
			a0, a1 := att[t2], att[t2+1]
			var s0, s1 float32
			for i, d := range do {
				s0 += v0[i] * d
				dv0[i] += a0 * d
				s1 += v1[i] * d
				dv1[i] += a1 * d
			}
			datt[t2], datt[t2+1] = s0, s1
		}
		for ; t2 < len(att); t2++ {
			off := base + t2*C3 + 2*C + h*hs
			v := j.qkv[off : off+hs]
			dv := j.dqkv[off : off+hs]
			v, dv = v[:len(do)], dv[:len(do)]
			a := att[t2]
			var s float32
			for i, d := range do {
				s += v[i] * d
				dv[i] += a * d
			}
			datt[t2] = s
		}
		var dot float32
		for t2, a := range att {
			dot += a * datt[t2]
		}
		for t2, a := range att {
			datt[t2] = a * (datt[t2] - dot)
		}
		qo := base + t*C3 + h*hs
		dq := j.dqkv[qo : qo+hs]
		q := j.qkv[qo : qo+hs]
		q = q[:len(dq)]
		t2 = 0
		for ; t2+2 <= len(datt); t2 += 2 {
			// dq[i] stays in a register across two positions, added in order.
			off := base + t2*C3 + C + h*hs
			k0, k1 := j.qkv[off:off+hs], j.qkv[off+C3:off+C3+hs]
			dk0, dk1 := j.dqkv[off:off+hs], j.dqkv[off+C3:off+C3+hs]
			k0, k1, dk0, dk1 = k0[:len(dq)], k1[:len(dq)], dk0[:len(dq)], dk1[:len(dq)]
			ds0, ds1 := datt[t2]*j.scale, datt[t2+1]*j.scale
			for i, acc := range dq {
				qi := q[i]
				acc += k0[i] * ds0
				acc += k1[i] * ds1
				dq[i] = acc
				dk0[i] += qi * ds0
				dk1[i] += qi * ds1
			}
		}
		for ; t2 < len(datt); t2++ {
			off := base + t2*C3 + C + h*hs
			k := j.qkv[off : off+hs]
			dk := j.dqkv[off : off+hs]
			k, dk = k[:len(dq)], dk[:len(dq)]
			ds := datt[t2] * j.scale
			for i := range dq {
				dq[i] += k[i] * ds
				dk[i] += q[i] * ds
			}
		}
	}
}

// AttentionBackward implements tensor.Backend. scratch receives the gradient of the
// pre-softmax scores.
func (b *Backend) AttentionBackward(dqkv, scratch, dout, qkv, att *tensor.Tensor, B, T, C, NH int) {
	defer b.unlock(b.lock("AttentionBackward"))
	const op = "AttentionBackward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	b.attB = attBwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(C / NH),
		dqkv: f32(op, "dqkv", dqkv, B*T*3*C), datts: f32(op, "scratch", scratch, B*NH*T*T),
		dout: f32(op, "dout", dout, B*T*C), qkv: f32(op, "qkv", qkv, B*T*3*C), att: f32(op, "att", att, B*NH*T*T)}
	if hs := C / NH; useAttnVector(hs) && T > 0 {
		b.workerScratch(keyBlocks(T) * (hs + 1) * 8)
		b.attB.scratch = b.scratch
	}
	b.pool.doWork(&b.attB, B*NH, 2*B*NH*T*(T+1)*C/NH)
	b.attB = attBwdJob{}
}

type attDecJob struct {
	Tq, pos, maxT, C, NH int
	out, kc, vc, qkv     []float32
	scale                float32
	scratch              [][]float32
}

func (j *attDecJob) run(w, r int) {
	Tq, C, NH := j.Tq, j.C, j.NH
	hs := C / NH
	tq := r % Tq
	h := (r / Tq) % NH
	b := r / (Tq * NH)
	p := j.pos + tq
	q := j.qkv[(b*Tq+tq)*3*C+h*hs : (b*Tq+tq)*3*C+(h+1)*hs]
	cb := b*j.maxT*C + h*hs
	attendRow(j.out[(b*Tq+tq)*C+h*hs:(b*Tq+tq)*C+(h+1)*hs], j.scratch[w][:p+1], q, j.kc[cb:], j.vc[cb:], C, j.scale)
}

// AttentionDecode implements tensor.Backend. It runs the same row kernel as AttentionForward,
// so a query's output equals the full-sequence forward bit for bit.
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
	b.workerScratch(maxT)
	b.attD = attDecJob{Tq: Tq, pos: pos, maxT: maxT, C: C, NH: NH, scale: attnScale(C / NH),
		out: f32(op, "out", out, B*Tq*C), kc: kc, vc: vc, qkv: x, scratch: b.scratch}
	b.pool.doWork(&b.attD, B*NH*Tq, 2*B*Tq*(pos+Tq)*C)
	b.attD = attDecJob{}
}
