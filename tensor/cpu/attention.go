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

type attFwdJob struct {
	B, T, C, NH   int
	out, att, qkv []float32
	scale         float32
}

func (j *attFwdJob) run(_, r int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	t := r % T
	h := (r / T) % NH
	b := r / (T * NH)
	base := b * T * C3
	att := j.att[r*T : (r+1)*T]
	clear(att[t+1:])
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
	b.mu.Lock()
	defer b.mu.Unlock()
	const op = "AttentionForward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	b.attF = attFwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(C / NH),
		out: f32(op, "out", out, B*T*C), att: f32(op, "att", att, B*NH*T*T), qkv: f32(op, "qkv", qkv, B*T*3*C)}
	b.pool.doWork(&b.attF, B*NH*T, B*NH*T*(T+1)*C/NH)
	b.attF = attFwdJob{}
}

// attBwdJob handles one (batch, head) per chunk, walking positions in order so the keys' and
// values' gradients accumulate in llm.c's order. The softmax backward uses the O(T) identity
// dpre[t3] = att[t3] * (datt[t3] - sum_t2 att[t2] datt[t2]) instead of llm.c's O(T^2) loop.
type attBwdJob struct {
	B, T, C, NH         int
	dqkv, scratch, dout []float32
	qkv, att            []float32
	scale               float32
}

func (j *attBwdJob) run(_, bh int) {
	T, C, NH := j.T, j.C, j.NH
	hs, C3 := C/NH, 3*C
	b, h := bh/NH, bh%NH
	base := b * T * C3
	for t := 0; t < T; t++ {
		row := (bh*T + t) * T
		att := j.att[row : row+t+1]
		datt := j.scratch[row : row+T]
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
	b.mu.Lock()
	defer b.mu.Unlock()
	const op = "AttentionBackward"
	dims(op, B, T, C)
	checkHeads(op, C, NH)
	b.attB = attBwdJob{B: B, T: T, C: C, NH: NH, scale: attnScale(C / NH),
		dqkv: f32(op, "dqkv", dqkv, B*T*3*C), scratch: f32(op, "scratch", scratch, B*NH*T*T),
		dout: f32(op, "dout", dout, B*T*C), qkv: f32(op, "qkv", qkv, B*T*3*C), att: f32(op, "att", att, B*NH*T*T)}
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
	b.mu.Lock()
	defer b.mu.Unlock()
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
