package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// logSoftmaxCutRef is the truncated log-softmax in float64: row i's softmax of logits/T runs
// over K_i = {j < V : logits[i,j] >= cut[i]} ∪ {tg[i]}.
func logSoftmaxCutRef(logits []float64, tg []int32, cut []float64, N, V, Vp int, T float64) (logp, ent []float64) {
	logp, ent = make([]float64, N), make([]float64, N)
	for i := 0; i < N; i++ {
		kept := func(j int) bool { return logits[i*Vp+j] >= cut[i] || j == int(tg[i]) }
		mx := math.Inf(-1)
		for j := 0; j < V; j++ {
			if kept(j) {
				mx = math.Max(mx, logits[i*Vp+j]/T)
			}
		}
		var s float64
		for j := 0; j < V; j++ {
			if kept(j) {
				s += math.Exp(logits[i*Vp+j]/T - mx)
			}
		}
		lse := mx + math.Log(s)
		logp[i] = logits[i*Vp+int(tg[i])]/T - lse
		for j := 0; j < V; j++ {
			if kept(j) {
				lp := logits[i*Vp+j]/T - lse
				ent[i] -= math.Exp(lp) * lp
			}
		}
	}
	return
}

func maxDiff(got []float32, want []float64) float64 {
	var m float64
	for i := range got {
		m = math.Max(m, math.Abs(float64(got[i])-want[i]))
	}
	return m
}

// cutoffCase are a row's cutoff kinds: keep all (-Inf), truncate between two logits, keep only
// the target (above every logit), truncate with the target below the cutoff (kept anyway),
// and a finite cutoff under every logit (keeps all).
const (
	cutAll = iota
	cutMid
	cutAbove
	cutTargetBelow
	cutUnder
	cutKinds
)

// pickCutoffs chooses row cutoffs of every kind in turn, each a midpoint between logits at
// least 1e-3 apart so a finite-difference step never moves a column across it; it may move
// targets (cutTargetBelow) and returns the kinds.
func pickCutoffs(r *rand.Rand, la []float32, tg []int32, N, V, Vp int) ([]float32, []int) {
	cut := make([]float32, N)
	kinds := make([]int, N)
	for i := 0; i < N; i++ {
		row := la[i*Vp : i*Vp+V]
		s := append([]float32(nil), row...)
		sort.Slice(s, func(a, b int) bool { return s[a] > s[b] })
		kind := i % cutKinds
		if V < 3 && (kind == cutMid || kind == cutTargetBelow) {
			kind = cutAll
		}
		kinds[i] = kind
		switch kind {
		case cutAll:
			cut[i] = float32(math.Inf(-1))
		case cutAbove:
			cut[i] = s[0] + 1
		case cutUnder:
			cut[i] = s[V-1] - 0.5
		case cutMid, cutTargetBelow:
			k := 1 + r.IntN(V-2) // keep the k largest
			for s[k-1]-s[k] < 1e-3 {
				k = 1 + r.IntN(V-2)
			}
			cut[i] = (s[k-1] + s[k]) / 2
			if kind == cutTargetBelow {
				for j, v := range row {
					if v < cut[i] {
						tg[i] = int32(j)
						break
					}
				}
			}
		}
	}
	return cut, kinds
}

// TestLogSoftmaxGatherCutoff checks the truncated log-softmax, its entropy and its gradient
// against a float64 reference and finite differences, that excluded columns get no gradient,
// that cutoffs keeping every column give the untruncated op's bits, and that the vector and
// portable loops agree bit for bit.
func TestLogSoftmaxGatherCutoff(t *testing.T) {
	defer func(v bool) { lsgVector = v }(lsgVector)
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(41, 42))
	for _, sh := range [][3]int{{10, 37, 40}, {5, 1003, 1008}, {5, 5, 5}, {2, 1, 1}} {
		for _, temp := range []float32{1, 0.7, 1.6} {
			N, V, Vp := sh[0], sh[1], sh[2]
			name := fmt.Sprint("N,V,Vp=", sh, " T=", temp)
			la := randn(r, N*Vp, 3)
			tg := randTokens(r, N, V)
			cut, kinds := pickCutoffs(r, la, tg, N, V, Vp)
			logits, targets, cutT := mk(t, b, la, N, Vp), mkI(t, b, tg, N), mk(t, b, cut, N)
			dlp, dent, d0 := randn(r, N, 1), randn(r, N, 1), randn(r, N*Vp, 1)

			var res [2][3][]float32
			for k, vec := range []bool{true, false} {
				lsgVector = vec
				logp, ent := mk(t, b, make([]float32, N), N), mk(t, b, make([]float32, N), N)
				b.LogSoftmaxGather(logp, ent, logits, targets, cutT, N, V, Vp, temp)
				dl := mk(t, b, clone(d0), N*Vp)
				b.LogSoftmaxGatherBackward(dl, logits, targets, cutT, mk(t, b, dlp, N), mk(t, b, dent, N), N, V, Vp, temp)
				res[k] = [3][]float32{Float32s(logp), Float32s(ent), Float32s(dl)}
			}
			for i, what := range []string{"logp", "entropy", "dlogits"} {
				if !bitsEqual(res[0][i], res[1][i]) {
					t.Errorf("%s: %s differs between the vector and portable loops", name, what)
				}
			}
			gotLp, gotEnt, gotD := res[0][0], res[0][1], res[0][2]

			cut64 := to64(cut)
			wl, we := logSoftmaxCutRef(to64(la), tg, cut64, N, V, Vp, float64(temp))
			near(t, name+" logp", gotLp, wl, 1e-6, 1e-6)
			near(t, name+" entropy", gotEnt, we, 1e-6, 1e-6)
			fd := fdGrad(to64(la), 1e-6, func(x []float64) float64 {
				l, e := logSoftmaxCutRef(x, tg, cut64, N, V, Vp, float64(temp))
				return dot(l, dlp) + dot(e, dent)
			})
			near(t, name+" dlogits", gotD, plus(d0, fd), 1e-5, 1e-4)
			t.Logf("%s: max |diff| logp %.2g entropy %.2g dlogits (vs finite differences) %.2g", name,
				maxDiff(gotLp, wl), maxDiff(gotEnt, we), maxDiff(gotD, plus(d0, fd)))

			// Without a cutoff, for the rows whose cutoff keeps every column: the same bits.
			logp, ent := mk(t, b, make([]float32, N), N), mk(t, b, make([]float32, N), N)
			b.LogSoftmaxGather(logp, ent, logits, targets, nil, N, V, Vp, temp)
			dl := mk(t, b, clone(d0), N*Vp)
			b.LogSoftmaxGatherBackward(dl, logits, targets, nil, mk(t, b, dlp, N), mk(t, b, dent, N), N, V, Vp, temp)
			fullLp, fullEnt, fullD := Float32s(logp), Float32s(ent), Float32s(dl)
			truncated := 0
			for i := 0; i < N; i++ {
				if math.IsNaN(float64(gotEnt[i])) || math.IsInf(float64(gotEnt[i]), 0) {
					t.Errorf("%s row %d: entropy %v", name, i, gotEnt[i])
				}
				row := func(x []float32) []float32 { return x[i*Vp : (i+1)*Vp] }
				if kinds[i] == cutAll || kinds[i] == cutUnder {
					if gotLp[i] != fullLp[i] || gotEnt[i] != fullEnt[i] || !bitsEqual(row(gotD), row(fullD)) {
						t.Errorf("%s row %d (keeps all): logp %v entropy %v, untruncated %v %v (or dlogits differ)",
							name, i, gotLp[i], gotEnt[i], fullLp[i], fullEnt[i])
					}
					continue
				}
				truncated++
				for j := 0; j < V; j++ {
					if la[i*Vp+j] < cut[i] && j != int(tg[i]) && gotD[i*Vp+j] != d0[i*Vp+j] {
						t.Errorf("%s row %d col %d: excluded column's dlogits %v changed from %v", name, i, j, gotD[i*Vp+j], d0[i*Vp+j])
					}
				}
				if kinds[i] == cutAbove && math.Abs(float64(gotLp[i])) > 1e-7 {
					t.Errorf("%s row %d: only the target kept, logp %v, want 0", name, i, gotLp[i])
				}
				if gotLp[i] < fullLp[i]-1e-6 {
					t.Errorf("%s row %d: truncated logp %v below the full %v", name, i, gotLp[i], fullLp[i])
				}
			}
			if V >= 3 && truncated == 0 {
				t.Fatalf("%s: no truncated row", name)
			}
		}
	}
}

// A logit equal to the cutoff is kept (>=), as the sampler keeps ties at the k-th value; a NaN
// cutoff is a programming error.
func TestLogSoftmaxGatherCutoffEdges(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	const N, V, Vp = 1, 6, 8
	la := []float32{1, 3, 2, 3, -1, 0.5, 7, 7}
	tg := []int32{2}
	logits, targets := mk(t, b, la, N, Vp), mkI(t, b, tg, N)
	logp, ent := mk(t, b, make([]float32, N), N), mk(t, b, make([]float32, N), N)
	b.LogSoftmaxGather(logp, ent, logits, targets, mk(t, b, []float32{2}, N), N, V, Vp, 1)
	// Kept: 3, 2, 3 (the padded 7s are not part of the row).
	z := 2*math.Exp(3) + math.Exp(2)
	want := 2 - math.Log(z)
	p3, p2 := math.Exp(3)/z, math.Exp(2)/z
	wantH := -(2*p3*math.Log(p3) + p2*math.Log(p2))
	near(t, "logp", Float32s(logp), []float64{want}, 1e-6, 1e-6)
	near(t, "entropy", Float32s(ent), []float64{wantH}, 1e-6, 1e-6)
	nan := float32(math.NaN())
	mustPanic(t, func() {
		b.LogSoftmaxGather(logp, ent, logits, targets, mk(t, b, []float32{nan}, N), N, V, Vp, 1)
	}, "LogSoftmaxGather", "cutoff", "NaN")
	var short *tensor.Tensor = mk(t, b, []float32{0, 0}, 2)
	mustPanic(t, func() {
		b.LogSoftmaxGatherBackward(logits, logits, targets, short.View(0, 0), logp, nil, N, V, Vp, 1)
	}, "cutoff")
}

// BenchmarkLogSoftmaxGatherCutoff is BenchmarkLogSoftmaxGather and its backward with every
// row truncated (the masked loops), to compare with the untruncated ones.
func BenchmarkLogSoftmaxGatherCutoff(b *testing.B) {
	be := New()
	defer be.Close()
	logits, dl := benchTensor(b, be, bN*bVp, 2), benchTensor(b, be, bN*bVp, 0)
	tg, logp, ent := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 0), benchTensor(b, be, bN, 0)
	cut := make([]float32, bN)
	for i := range cut {
		cut[i] = 5 // about the top 0.6% of N(0, 2) logits
	}
	cutT, err := tensor.FromSlice(be, cut, bN)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("forward", func(b *testing.B) {
		measure(b, 4*bN*bVp, 0, func() { be.LogSoftmaxGather(logp, ent, logits, tg, cutT, bN, bV, bVp, 0.7) })
	})
	b.Run("backward", func(b *testing.B) {
		measure(b, 4*3*bN*bVp, 0, func() { be.LogSoftmaxGatherBackward(dl, logits, tg, cutT, logp, ent, bN, bV, bVp, 0.7) })
	})
}
