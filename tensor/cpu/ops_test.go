package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

func matmulRef(a, b, bias []float32, M, N, K int, ta, tb bool) []float64 {
	out := make([]float64, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s float64
			if bias != nil {
				s = float64(bias[j])
			}
			for p := 0; p < K; p++ {
				av := a[i*K+p]
				if ta {
					av = a[p*M+i]
				}
				bv := b[p*N+j]
				if tb {
					bv = b[j*K+p]
				}
				s += float64(av) * float64(bv)
			}
			out[i*N+j] = s
		}
	}
	return out
}

func TestMatMul(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	r := rand.New(rand.NewPCG(9, 10))
	for _, sh := range [][3]int{{7, 5, 20}, {1, 1, 1}, {3, 37, 1}, {20, 1, 13}} {
		M, N, K := sh[0], sh[1], sh[2]
		for _, batch := range []int{0, 3} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, withBias := range []bool{false, true} {
						for _, acc := range []bool{false, true} {
							name := fmt.Sprintf("M%d N%d K%d batch%d ta%v tb%v bias%v acc%v", M, N, K, batch, ta, tb, withBias, acc)
							nb := max(batch, 1)
							aa, ba := randn(r, nb*M*K, 1), randn(r, nb*K*N, 1)
							o0 := randn(r, nb*M*N, 1)
							var bias *tensor.Tensor
							var biasA []float32
							if withBias {
								biasA = randn(r, N, 1)
								bias = mk(t, b, biasA, N)
							}
							out := mk(t, b, clone(o0), nb*M*N)
							b.MatMul(out, mk(t, b, aa, nb*M*K), mk(t, b, ba, nb*K*N), bias,
								tensor.MatMulParams{M: M, N: N, K: K, TransA: ta, TransB: tb, Accumulate: acc, Batch: batch})
							var want []float64
							for z := 0; z < nb; z++ {
								w := matmulRef(aa[z*M*K:(z+1)*M*K], ba[z*K*N:(z+1)*K*N], biasA, M, N, K, ta, tb)
								if acc {
									w = plus(o0[z*M*N:(z+1)*M*N], w)
								}
								want = append(want, w...)
							}
							near(t, name, Float32s(out), want, 1e-5, 1e-5)
						}
					}
				}
			}
		}
	}
}

func TestBiasBackward(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(11, 12))
	for _, sh := range [][2]int{{7, 20}, {1, 1}, {5, 3*colChunk + 5}} {
		N, C := sh[0], sh[1]
		da := randn(r, N*C, 1)
		db0 := randn(r, C, 1)
		db := mk(t, b, clone(db0), C)
		b.BiasBackward(db, mk(t, b, da, N*C), N, C)
		want := make([]float64, C)
		for i := 0; i < N; i++ {
			for j := 0; j < C; j++ {
				want[j] += float64(da[i*C+j])
			}
		}
		near(t, fmt.Sprint("BiasBackward ", sh), Float32s(db), plus(db0, want), 1e-5, 1e-5)
	}
}

func layerNormRef(x, w, bias []float64, N, C int) (out, mean, rstd []float64) {
	out, mean, rstd = make([]float64, N*C), make([]float64, N), make([]float64, N)
	for i := 0; i < N; i++ {
		row := x[i*C : (i+1)*C]
		var m, v float64
		for _, xv := range row {
			m += xv
		}
		m /= float64(C)
		for _, xv := range row {
			v += (xv - m) * (xv - m)
		}
		v /= float64(C)
		s := 1 / math.Sqrt(v+1e-5)
		for j, xv := range row {
			out[i*C+j] = (xv-m)*s*w[j] + bias[j]
		}
		mean[i], rstd[i] = m, s
	}
	return
}

func TestLayerNorm(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(13, 14))
	for _, sh := range [][2]int{{21, 20}, {1, 1}, {1, 3}, {5, 2*colChunk + 3}} {
		N, C := sh[0], sh[1]
		name := fmt.Sprint("N,C=", sh)
		xa, wa, ba := randn(r, N*C, 1.5), randn(r, C, 1), randn(r, C, 1)
		for i := range xa {
			xa[i] += 0.5 // non-zero mean
		}
		x, w, bi := mk(t, b, xa, N*C), mk(t, b, wa, C), mk(t, b, ba, C)
		out, mean, rstd := mk(t, b, make([]float32, N*C), N*C), mk(t, b, make([]float32, N), N), mk(t, b, make([]float32, N), N)
		b.LayerNormForward(out, mean, rstd, x, w, bi, N, C)
		wo, wm, wr := layerNormRef(to64(xa), to64(wa), to64(ba), N, C)
		near(t, name+" out", Float32s(out), wo, 1e-5, 1e-4)
		near(t, name+" mean", Float32s(mean), wm, 1e-6, 1e-5)
		near(t, name+" rstd", Float32s(rstd), wr, 1e-6, 1e-4)
		// Rows computed four at a time must equal the one-row kernel bit for bit.
		for i := 0; i < N; i++ {
			o := make([]float32, C)
			m, s := lnForwardRow(o, xa[i*C:(i+1)*C], wa, ba)
			if !bitsEqual(o, Float32s(out)[i*C:(i+1)*C]) || m != Float32s(mean)[i] || s != Float32s(rstd)[i] {
				t.Fatalf("%s: row %d differs from lnForwardRow", name, i)
			}
		}

		da := randn(r, N*C, 1)
		dx0, dw0, db0 := randn(r, N*C, 1), randn(r, C, 1), randn(r, C, 1)
		dx, dw, db := mk(t, b, clone(dx0), N*C), mk(t, b, clone(dw0), C), mk(t, b, clone(db0), C)
		b.LayerNormBackward(dx, dw, db, mk(t, b, da, N*C), x, w, mean, rstd, N, C)
		x64, w64, b64 := to64(xa), to64(wa), to64(ba)
		loss := func() float64 { o, _, _ := layerNormRef(x64, w64, b64, N, C); return dot(o, da) }
		const h = 1e-6
		near(t, name+" dinp", Float32s(dx), plus(dx0, fdGrad(x64, h, func([]float64) float64 { return loss() })), 1e-4, 1e-3)
		near(t, name+" dweight", Float32s(dw), plus(dw0, fdGrad(w64, h, func([]float64) float64 { return loss() })), 1e-4, 1e-3)
		near(t, name+" dbias", Float32s(db), plus(db0, fdGrad(b64, h, func([]float64) float64 { return loss() })), 1e-4, 1e-3)
	}
}

func TestEncoder(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(15, 16))
	for _, sh := range [][4]int{{3, 7, 20, 37}, {1, 1, 1, 1}, {2, 5, 2*colChunk + 1, 3}} {
		B, T, C, V := sh[0], sh[1], sh[2], sh[3]
		name := fmt.Sprint("B,T,C,V=", sh)
		tok := randTokens(r, B*T, V)
		tok[0] = int32(V - 1)
		wte, wpe := randn(r, V*C, 1), randn(r, T*C, 1)
		out := mk(t, b, make([]float32, B*T*C), B*T*C)
		tt := mkI(t, b, tok, B, T)
		b.EncoderForward(out, tt, mk(t, b, wte, V, C), mk(t, b, wpe, T, C), B, T, C)
		want := make([]float64, B*T*C)
		for i, ix := range tok {
			for c := 0; c < C; c++ {
				want[i*C+c] = float64(wte[int(ix)*C+c] + wpe[(i%T)*C+c])
			}
		}
		near(t, name+" forward", Float32s(out), want, 0, 0)

		// out is linear in wte and wpe, so the gradient of sum(dout*out) is the scatter-add.
		da := randn(r, B*T*C, 1)
		dwte0, dwpe0 := randn(r, V*C, 1), randn(r, T*C, 1)
		dwte, dwpe := mk(t, b, clone(dwte0), V*C), mk(t, b, clone(dwpe0), T*C)
		b.EncoderBackward(dwte, dwpe, mk(t, b, da, B*T*C), tt, B, T, C)
		gte, gpe := make([]float64, V*C), make([]float64, T*C)
		for i, ix := range tok {
			for c := 0; c < C; c++ {
				gte[int(ix)*C+c] += float64(da[i*C+c])
				gpe[(i%T)*C+c] += float64(da[i*C+c])
			}
		}
		near(t, name+" dwte", Float32s(dwte), plus(dwte0, gte), 1e-5, 1e-5)
		near(t, name+" dwpe", Float32s(dwpe), plus(dwpe0, gpe), 1e-5, 1e-5)
	}
}

// attentionRef is causal multi-head attention in float64; it returns out and the probabilities.
func attentionRef(qkv []float64, B, T, C, NH int) (out, att []float64) {
	hs := C / NH
	out, att = make([]float64, B*T*C), make([]float64, B*NH*T*T)
	scale := 1 / math.Sqrt(float64(hs))
	for b := 0; b < B; b++ {
		for h := 0; h < NH; h++ {
			for t := 0; t < T; t++ {
				q := qkv[(b*T+t)*3*C+h*hs:]
				a := att[((b*NH+h)*T+t)*T:]
				mx := math.Inf(-1)
				for t2 := 0; t2 <= t; t2++ {
					k := qkv[(b*T+t2)*3*C+C+h*hs:]
					var s float64
					for i := 0; i < hs; i++ {
						s += q[i] * k[i]
					}
					a[t2] = s * scale
					mx = math.Max(mx, a[t2])
				}
				var sum float64
				for t2 := 0; t2 <= t; t2++ {
					a[t2] = math.Exp(a[t2] - mx)
					sum += a[t2]
				}
				for t2 := 0; t2 <= t; t2++ {
					a[t2] /= sum
					v := qkv[(b*T+t2)*3*C+2*C+h*hs:]
					for i := 0; i < hs; i++ {
						out[(b*T+t)*C+h*hs+i] += a[t2] * v[i]
					}
				}
			}
		}
	}
	return
}

// Head sizes 4, 2 and 20 take the portable loops; 8, 16, 40 and 64 the vector kernels where the
// CPU has them (with T not a multiple of 8 and above 32 for partial and four-block key groups).
var attShapes = [][4]int{{3, 7, 20, 5}, {1, 1, 4, 1}, {2, 5, 6, 3}, {1, 9, 8, 1}, {2, 13, 32, 2}, {1, 33, 40, 1}, {1, 3, 64, 1}}

func TestAttention(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(17, 18))
	for _, sh := range attShapes {
		B, T, C, NH := sh[0], sh[1], sh[2], sh[3]
		name := fmt.Sprint("B,T,C,NH=", sh)
		qa := randn(r, B*T*3*C, 1)
		qkv := mk(t, b, qa, B, T, 3*C)
		out := mk(t, b, make([]float32, B*T*C), B, T, C)
		att := mk(t, b, randn(r, B*NH*T*T, 1), B, NH, T, T) // stale values must be overwritten
		b.AttentionForward(out, att, qkv, B, T, C, NH)
		wo, wa := attentionRef(to64(qa), B, T, C, NH)
		near(t, name+" out", Float32s(out), wo, 1e-5, 1e-5)
		near(t, name+" att", Float32s(att), wa, 1e-6, 1e-5)

		da := randn(r, B*T*C, 1)
		dq0 := randn(r, B*T*3*C, 1)
		dqkv := mk(t, b, clone(dq0), B*T*3*C)
		scratch := mk(t, b, randn(r, B*NH*T*T, 1), B*NH*T*T)
		b.AttentionBackward(dqkv, scratch, mk(t, b, da, B*T*C), qkv, out, att, B, T, C, NH)
		fd := fdGrad(to64(qa), 1e-6, func(x []float64) float64 { o, _ := attentionRef(x, B, T, C, NH); return dot(o, da) })
		near(t, name+" dqkv", Float32s(dqkv), plus(dq0, fd), 1e-4, 1e-3)
	}
}

// TestAttentionDecode feeds a sequence through the KV cache in pieces (a prompt, then one
// position at a time) and compares with the full-sequence forward.
func TestAttentionDecode(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(19, 20))
	for _, sh := range attShapes {
		B, T, C, NH := sh[0], sh[1], sh[2], sh[3]
		maxT := T + 2
		qa := randn(r, B*T*3*C, 1)
		full := mk(t, b, make([]float32, B*T*C), B*T*C)
		b.AttentionForward(full, mk(t, b, make([]float32, B*NH*T*T), B*NH*T*T), mk(t, b, qa, B*T*3*C), B, T, C, NH)
		want := Float32s(full)
		kc := mk(t, b, make([]float32, B*maxT*C), B*maxT*C)
		vc := mk(t, b, make([]float32, B*maxT*C), B*maxT*C)
		for pos := 0; pos < T; {
			Tq := 1
			if pos == 0 {
				Tq = (T + 1) / 2
			}
			piece := make([]float32, 0, B*Tq*3*C)
			for bb := 0; bb < B; bb++ {
				piece = append(piece, qa[(bb*T+pos)*3*C:(bb*T+pos+Tq)*3*C]...)
			}
			out := mk(t, b, make([]float32, B*Tq*C), B*Tq*C)
			b.AttentionDecode(out, kc, vc, mk(t, b, piece, B*Tq*3*C), B, Tq, pos, maxT, C, NH)
			for bb := 0; bb < B; bb++ {
				got := Float32s(out)[bb*Tq*C : (bb+1)*Tq*C]
				if w := want[(bb*T+pos)*C : (bb*T+pos+Tq)*C]; !bitsEqual(got, w) {
					t.Fatalf("%v pos %d batch %d: decode %v, forward %v", sh, pos, bb, got, w)
				}
				for tq := 0; tq < Tq; tq++ {
					k := Float32s(kc)[(bb*maxT+pos+tq)*C : (bb*maxT+pos+tq+1)*C]
					if !bitsEqual(k, qa[(bb*T+pos+tq)*3*C+C:(bb*T+pos+tq)*3*C+2*C]) {
						t.Fatalf("%v: kcache at batch %d position %d not written", sh, bb, pos+tq)
					}
				}
			}
			pos += Tq
		}
	}
}

func crossEntropyRef(logits []float64, tg []int32, N, V, Vp int) (loss, probs []float64) {
	loss, probs = make([]float64, N), make([]float64, N*Vp)
	for i := 0; i < N; i++ {
		l := logits[i*Vp : i*Vp+V]
		mx := math.Inf(-1)
		for _, v := range l {
			mx = math.Max(mx, v)
		}
		var s float64
		for _, v := range l {
			s += math.Exp(v - mx)
		}
		for j, v := range l {
			probs[i*Vp+j] = math.Exp(v-mx) / s
		}
		loss[i] = -(l[tg[i]] - mx - math.Log(s))
	}
	return
}

var vocabShapes = [][3]int{{7, 37, 40}, {1, 1, 1}, {3, 5, 5}, {4, 2, 8}}

func TestCrossEntropy(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(21, 22))
	for _, sh := range vocabShapes {
		N, V, Vp := sh[0], sh[1], sh[2]
		name := fmt.Sprint("N,V,Vp=", sh)
		la := randn(r, N*Vp, 3)
		tg := randTokens(r, N, V)
		logits, targets := mk(t, b, la, N, Vp), mkI(t, b, tg, N)
		losses := mk(t, b, make([]float32, N), N)
		probs := mk(t, b, randn(r, N*Vp, 1), N, Vp)
		b.CrossEntropyForward(losses, probs, logits, targets, N, V, Vp)
		wl, wp := crossEntropyRef(to64(la), tg, N, V, Vp)
		near(t, name+" loss", Float32s(losses), wl, 1e-5, 1e-5)
		near(t, name+" probs", Float32s(probs), wp, 1e-7, 1e-5)
		// Rows computed in pairs must equal rows computed alone, bit for bit.
		for i := 0; i < N; i++ {
			l1, p1 := mk(t, b, make([]float32, 1), 1), mk(t, b, make([]float32, Vp), Vp)
			b.CrossEntropyForward(l1, p1, mk(t, b, la[i*Vp:(i+1)*Vp], Vp), mkI(t, b, tg[i:i+1], 1), 1, V, Vp)
			if Float32s(l1)[0] != Float32s(losses)[i] || !bitsEqual(Float32s(p1), Float32s(probs)[i*Vp:(i+1)*Vp]) {
				t.Fatalf("%s: row %d alone differs from the batch", name, i)
			}
		}

		dl := randn(r, N, 1)
		d0 := randn(r, N*Vp, 1)
		dlogits := mk(t, b, clone(d0), N*Vp)
		b.CrossEntropyBackward(dlogits, probs, targets, mk(t, b, dl, N), N, V, Vp)
		fd := fdGrad(to64(la), 1e-6, func(x []float64) float64 { l, _ := crossEntropyRef(x, tg, N, V, Vp); return dot(l, dl) })
		near(t, name+" dlogits", Float32s(dlogits), plus(d0, fd), 1e-5, 1e-4)
	}
}

func logSoftmaxRef(logits []float64, tg []int32, N, V, Vp int, T float64) (logp, ent []float64) {
	logp, ent = make([]float64, N), make([]float64, N)
	for i := 0; i < N; i++ {
		z := make([]float64, V)
		mx := math.Inf(-1)
		for j := range z {
			z[j] = logits[i*Vp+j] / T
			mx = math.Max(mx, z[j])
		}
		var s float64
		for _, v := range z {
			s += math.Exp(v - mx)
		}
		lse := mx + math.Log(s)
		logp[i] = z[tg[i]] - lse
		for _, v := range z {
			ent[i] -= math.Exp(v-lse) * (v - lse)
		}
	}
	return
}

func TestLogSoftmaxGather(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(23, 24))
	for _, sh := range vocabShapes {
		for _, temp := range []float32{1, 0.7, 1.6} {
			for _, withEnt := range []bool{true, false} {
				N, V, Vp := sh[0], sh[1], sh[2]
				name := fmt.Sprint("N,V,Vp=", sh, " T=", temp, " entropy=", withEnt)
				la := randn(r, N*Vp, 3)
				tg := randTokens(r, N, V)
				logits, targets := mk(t, b, la, N, Vp), mkI(t, b, tg, N)
				logp := mk(t, b, make([]float32, N), N)
				var ent *tensor.Tensor
				if withEnt {
					ent = mk(t, b, make([]float32, N), N)
				}
				b.LogSoftmaxGather(logp, ent, logits, targets, nil, N, V, Vp, temp)
				wl, we := logSoftmaxRef(to64(la), tg, N, V, Vp, float64(temp))
				near(t, name+" logp", Float32s(logp), wl, 1e-6, 1e-6)
				if withEnt {
					near(t, name+" entropy", Float32s(ent), we, 1e-6, 1e-6)
				}

				dlp, dent := randn(r, N, 1), randn(r, N, 1)
				var dentT *tensor.Tensor
				if withEnt {
					dentT = mk(t, b, dent, N)
				} else {
					clear(dent)
				}
				d0 := randn(r, N*Vp, 1)
				dlogits := mk(t, b, clone(d0), N*Vp)
				b.LogSoftmaxGatherBackward(dlogits, logits, targets, nil, mk(t, b, dlp, N), dentT, N, V, Vp, temp)
				fd := fdGrad(to64(la), 1e-6, func(x []float64) float64 {
					l, e := logSoftmaxRef(x, tg, N, V, Vp, float64(temp))
					return dot(l, dlp) + dot(e, dent)
				})
				near(t, name+" dlogits", Float32s(dlogits), plus(d0, fd), 1e-5, 1e-4)
			}
		}
	}
}

// TestAttentionVectorMatchesPortable checks that every vector kernel set gives the portable
// loops' bits in the forward, the backward and decoding, for head sizes and lengths that take
// every block and tail path.
func TestAttentionVectorMatchesPortable(t *testing.T) {
	if len(attnKernelSets) == 0 {
		t.Skip("no vector attention kernels on this CPU or build")
	}
	defer func(k *attnKernels) { attnActive = k }(attnActive)
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(25, 26))
	for _, sh := range [][4]int{{2, 37, 64, 2}, {1, 13, 48, 1}, {3, 21, 96, 6}, {1, 1, 16, 1}, {1, 70, 128, 2}} {
		B, T, C, NH := sh[0], sh[1], sh[2], sh[3]
		qkv := mk(t, b, randn(r, B*T*3*C, 1), B*T*3*C)
		da := mk(t, b, randn(r, B*T*C, 1), B*T*C)
		d0 := randn(r, B*T*3*C, 1)
		run := func(k *attnKernels) [4][]float32 {
			attnActive = k
			out := mk(t, b, make([]float32, B*T*C), B*T*C)
			att := mk(t, b, make([]float32, B*NH*T*T), B*NH*T*T)
			dqkv := mk(t, b, clone(d0), B*T*3*C)
			b.AttentionForward(out, att, qkv, B, T, C, NH)
			b.AttentionBackward(dqkv, mk(t, b, make([]float32, B*NH*T*T), B*NH*T*T), da, qkv, out, att, B, T, C, NH)
			// Decode the last position of each sequence over a cache holding the others.
			kc, vc := mk(t, b, make([]float32, B*T*C), B*T*C), mk(t, b, make([]float32, B*T*C), B*T*C)
			q := Float32s(qkv)
			for bb := 0; bb < B; bb++ {
				for tt := 0; tt < T-1; tt++ {
					copy(Float32s(kc)[(bb*T+tt)*C:], q[(bb*T+tt)*3*C+C:(bb*T+tt)*3*C+2*C])
					copy(Float32s(vc)[(bb*T+tt)*C:], q[(bb*T+tt)*3*C+2*C:(bb*T+tt+1)*3*C])
				}
			}
			last := make([]float32, 0, B*3*C)
			for bb := 0; bb < B; bb++ {
				last = append(last, q[(bb*T+T-1)*3*C:(bb*T+T)*3*C]...)
			}
			dec := mk(t, b, make([]float32, B*C), B*C)
			b.AttentionDecode(dec, kc, vc, mk(t, b, last, B*3*C), B, 1, T-1, T, C, NH)
			return [4][]float32{Float32s(out), Float32s(att), Float32s(dqkv), Float32s(dec)}
		}
		want := run(nil)
		for _, k := range attnKernelSets {
			got := run(k)
			for i, name := range []string{"out", "att", "dqkv", "decode"} {
				if !bitsEqual(got[i], want[i]) {
					t.Errorf("%v: %s differs between the %s kernels and the portable loops", sh, name, k.name)
				}
			}
		}
	}
}

// TestLogSoftmaxVectorMatchesPortable checks the vector log-softmax kernels against the portable
// loops bit for bit.
func TestLogSoftmaxVectorMatchesPortable(t *testing.T) {
	defer func(v bool) { lsgVector = v }(lsgVector)
	b := NewWithThreads(2)
	defer b.Close()
	r := rand.New(rand.NewPCG(27, 28))
	const N, V, Vp = 5, 1003, 1008
	la := randn(r, N*Vp, 3)
	tg := randTokens(r, N, V)
	tg[0], tg[1] = 0, V-1
	logits, targets := mk(t, b, la, N, Vp), mkI(t, b, tg, N)
	dlp, dent, d0 := mk(t, b, randn(r, N, 1), N), mk(t, b, randn(r, N, 1), N), randn(r, N*Vp, 1)
	var res [2][3][]float32
	for k, vec := range []bool{true, false} {
		lsgVector = vec
		logp, ent, dl := mk(t, b, make([]float32, N), N), mk(t, b, make([]float32, N), N), mk(t, b, clone(d0), N*Vp)
		b.LogSoftmaxGather(logp, ent, logits, targets, nil, N, V, Vp, 0.9)
		b.LogSoftmaxGatherBackward(dl, logits, targets, nil, dlp, dent, N, V, Vp, 0.9)
		res[k] = [3][]float32{Float32s(logp), Float32s(ent), Float32s(dl)}
	}
	for i, name := range []string{"logp", "entropy", "dlogits"} {
		if !bitsEqual(res[0][i], res[1][i]) {
			t.Errorf("%s differs between the vector and portable loops", name)
		}
	}
}
