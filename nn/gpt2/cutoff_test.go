package gpt2_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// truncRef is log_softmax(l/T) over {v : l[v] >= cut} ∪ {tg} at tg, and that distribution's
// entropy, in float64.
func truncRef(l []float32, tg int, cut float32, T float64) (logp, ent float64) {
	mx := math.Inf(-1)
	keep := func(v int) bool { return l[v] >= cut || v == tg }
	for v := range l {
		if keep(v) {
			mx = math.Max(mx, float64(l[v])/T)
		}
	}
	var s float64
	for v := range l {
		if keep(v) {
			s += math.Exp(float64(l[v])/T - mx)
		}
	}
	lse := mx + math.Log(s)
	for v := range l {
		if keep(v) {
			lp := float64(l[v])/T - lse
			ent -= math.Exp(lp) * lp
		}
	}
	return float64(l[tg])/T - lse, ent
}

// LogProbs and SelectedHead.Forward with cutoffs give the truncated distribution's log-probs
// and entropies; -Inf cutoffs give the untruncated bits; bad cutoffs are errors.
func TestLogProbsCutoff(t *testing.T) {
	inputs, targets := tapeTokens()
	m := tapeModel(t, true)
	if err := m.Forward(nil, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	logits, err := tensor.ToHost(m.Logits().Value)
	if err != nil {
		t.Fatal(err)
	}
	V, Vp := tapeCfg.VocabSize, tapeCfg.PaddedVocabSize
	n := tapeB * tapeT
	cut := make([]float32, n)
	for i := range cut {
		row := logits[i*Vp : i*Vp+V]
		s := append([]float32(nil), row...)
		sort.Slice(s, func(a, b int) bool { return s[a] > s[b] })
		switch i % 3 {
		case 0:
			cut[i] = float32(math.Inf(-1))
		default:
			k := 2 + i%5
			cut[i] = (s[k-1] + s[k]) / 2
		}
	}
	lp, ent, err := m.LogProbs(nil, targets, cut, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	gotLp, _ := tensor.ToHost(lp.Value)
	gotEnt, _ := tensor.ToHost(ent.Value)
	var worst float64
	for i := range cut {
		wl, we := truncRef(logits[i*Vp:i*Vp+V], int(targets[i]), cut[i], tapeTemp)
		worst = math.Max(worst, math.Max(math.Abs(float64(gotLp[i])-wl), math.Abs(float64(gotEnt[i])-we)))
	}
	t.Logf("truncated log-probs and entropies: max |diff| %.2g against the float64 reference", worst)
	if worst > 2e-6 {
		t.Fatalf("truncated log-probs and entropies differ from the float64 reference by up to %g", worst)
	}

	// The same at selected positions of a trunk-only pass.
	positions := []int{0, 1, 4, 5, 9, 13}
	sel, selCut := make([]int32, len(positions)), make([]float32, len(positions))
	for k, p := range positions {
		sel[k], selCut[k] = targets[p], cut[p]
	}
	if err := m.ForwardTrunk(nil, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	head := m.NewSelectedHead()
	hl, he, err := head.Forward(nil, positions, sel, selCut, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	hLp, _ := tensor.ToHost(hl.Value)
	hEnt, _ := tensor.ToHost(he.Value)
	for k, p := range positions {
		if math.Abs(float64(hLp[k]-gotLp[p])) > 1e-5 || math.Abs(float64(hEnt[k]-gotEnt[p])) > 1e-5 {
			t.Fatalf("position %d: selected head %v %v, LogProbs %v %v", p, hLp[k], hEnt[k], gotLp[p], gotEnt[p])
		}
	}

	// All -Inf: the untruncated op's bits.
	if err := m.Forward(nil, inputs, tapeB, tapeT); err != nil {
		t.Fatal(err)
	}
	all := make([]float32, n)
	for i := range all {
		all[i] = float32(math.Inf(-1))
	}
	lp, _, err = m.LogProbs(nil, targets, all, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	withInf, _ := tensor.ToHost(lp.Value)
	lp, _, err = m.LogProbs(nil, targets, nil, tapeTemp)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := tensor.ToHost(lp.Value)
	bitwiseEqual(t, "log-probs with -Inf cutoffs and without", withInf, plain)
	if _, _, err := m.LogProbs(nil, targets, cut[:3], tapeTemp); err == nil || !strings.Contains(err.Error(), "cutoffs") {
		t.Fatalf("3 cutoffs for %d positions: err %v", n, err)
	}
	bad := append([]float32(nil), cut...)
	bad[4] = float32(math.NaN())
	if _, _, err := m.LogProbs(nil, targets, bad, tapeTemp); err == nil || !strings.Contains(err.Error(), "cutoffs[4]") {
		t.Fatalf("NaN cutoff: err %v", err)
	}
	if _, _, err := head.Forward(nil, positions, sel, selCut[:1], tapeTemp); err == nil {
		t.Fatal("1 cutoff for 6 positions was accepted")
	}
}
