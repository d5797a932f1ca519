package objective

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// A two-turn episode worked by hand, gamma = lam = 0.5. Positions: 0-1 the first turn (reward 1
// on its last token), 2-3 the environment's reply, 4 the second turn (reward 2), 5 an inserted
// end-of-turn token, 6 padding. Values on untrained positions are 9 to show they are ignored.
// The trained tokens 0, 1, 4 form the dense sequence r = (0, 1, 2), V = (0.25, 0.25, 1):
//
//	pos 4: delta = 2 + 0.5*0    - 1    =  1      A = 1                      R = 1 + 1     = 2
//	pos 1: delta = 1 + 0.5*1    - 0.25 =  1.25   A = 1.25 + 0.25*1   = 1.5  R = 1.5 + 0.25 = 1.75
//	pos 0: delta = 0 + 0.5*0.25 - 0.25 = -0.125  A = -0.125 + 0.25*1.5 = 0.25  R = 0.25 + 0.25 = 0.5
//
// GAE, which stops at the reply, gives position 1 only delta = 1 - 0.25 = 0.75. The second row
// is an episode that is not trained: all zeros.
func TestGAEOverTurnsHandWorked(t *testing.T) {
	rewards := [][]float64{{0, 1, 0, 0, 2, 0, 0}, {0, 0, 0, 0, 0, 0, 0}}
	values := [][]float64{{0.25, 0.25, 9, 9, 1, 9, 9}, {1, 2, 3, 4, 5, 6, 7}}
	trained := [][]float64{{1, 1, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 0, 0, 0}}
	adv, ret, err := GAEOverTurns(rewards, values, trained, 0.5, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	wantAdv := [][]float64{{0.25, 1.5, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 0, 0, 0}}
	wantRet := [][]float64{{0.5, 1.75, 0, 0, 2, 0, 0}, {0, 0, 0, 0, 0, 0, 0}}
	for i := range wantAdv {
		for k := range wantAdv[i] {
			if adv[i][k] != wantAdv[i][k] || ret[i][k] != wantRet[i][k] {
				t.Errorf("[%d][%d]: A %v R %v, want A %v R %v", i, k, adv[i][k], ret[i][k], wantAdv[i][k], wantRet[i][k])
			}
		}
	}
	cut, _, err := GAE(rewards, values, trained, 0.5, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if cut[0][1] != 0.75 {
		t.Errorf("GAE at the reply's edge: %v, want 0.75 (the cut this function removes)", cut[0][1])
	}
}

// Without gaps inside the trained span (a prompt or padding around it is fine), GAEOverTurns is
// GAE, bit for bit.
func TestGAEOverTurnsEqualsGAEWithoutGaps(t *testing.T) {
	r := rng.New(11)
	for trial := 0; trial < 200; trial++ {
		n, T := 1+r.Intn(4), 1+r.Intn(12)
		rewards, values, mask := Zeros(n, T), Zeros(n, T), Zeros(n, T)
		for i := 0; i < n; i++ {
			start := r.Intn(T + 1)
			end := start + r.Intn(T-start+1)
			for k := 0; k < T; k++ {
				values[i][k] = r.Normal()
				if k >= start && k < end {
					mask[i][k] = 1
					rewards[i][k] = r.Normal()
				}
			}
		}
		gamma, lam := r.Float64(), r.Float64()
		if trial%5 == 0 {
			gamma, lam = 1, 1
		}
		a1, r1, err := GAE(rewards, values, mask, gamma, lam)
		if err != nil {
			t.Fatal(err)
		}
		a2, r2, err := GAEOverTurns(rewards, values, mask, gamma, lam)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a1 {
			for k := range a1[i] {
				if a1[i][k] != a2[i][k] || r1[i][k] != r2[i][k] {
					t.Fatalf("trial %d [%d][%d]: GAE (%v, %v), GAEOverTurns (%v, %v)", trial, i, k, a1[i][k], r1[i][k], a2[i][k], r2[i][k])
				}
			}
		}
	}
}

// On random episodes, GAEOverTurns matches the compacting reference.
func TestGAEOverTurnsMatchesReference(t *testing.T) {
	r := rng.New(12)
	for trial := 0; trial < 300; trial++ {
		n, T := 1+r.Intn(5), 1+r.Intn(20)
		rewards, values, trained := Zeros(n, T), Zeros(n, T), Zeros(n, T)
		for i := 0; i < n; i++ {
			if trial%2 == 0 {
				rewards[i], values[i], trained[i] = episodeRow(r, T)
				continue
			}
			for k := 0; k < T; k++ { // any mask at all
				values[i][k] = r.Normal()
				if r.Float64() < 0.5 {
					trained[i][k], rewards[i][k] = 1, r.Normal()
				}
			}
		}
		gamma, lam := r.Float64(), r.Float64()
		switch trial % 7 {
		case 0:
			gamma, lam = 1, 1
		case 1:
			gamma, lam = 0, r.Float64()
		case 2:
			lam = 0
		}
		adv, ret, err := GAEOverTurns(rewards, values, trained, gamma, lam)
		if err != nil {
			t.Fatal(err)
		}
		wantAdv, wantRet := gaeOverTurnsRef(rewards, values, trained, gamma, lam)
		for i := range adv {
			for k := range adv[i] {
				if !close64(adv[i][k], wantAdv[i][k]) || !close64(ret[i][k], wantRet[i][k]) {
					t.Fatalf("trial %d [%d][%d] mask %v: (%v, %v), reference (%v, %v)", trial, i, k, trained[i], adv[i][k], ret[i][k], wantAdv[i][k], wantRet[i][k])
				}
			}
		}
	}
}

func close64(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-12*math.Abs(b) }

// Inserting untrained positions (with any values) anywhere leaves every trained token's
// advantage and return unchanged, bit for bit: masked tokens are transparent.
func TestGAEOverTurnsUntrainedTokensAreTransparent(t *testing.T) {
	r := rng.New(13)
	for trial := 0; trial < 100; trial++ {
		L := 1 + r.Intn(10)
		dense := [][]float64{make([]float64, L), make([]float64, L), make([]float64, L)} // rewards, values, mask
		for k := 0; k < L; k++ {
			dense[0][k], dense[1][k], dense[2][k] = r.Normal(), r.Normal(), 1
		}
		var spread [3][]float64
		var where []int
		for k := 0; k < L; k++ {
			for g := r.Intn(3); g > 0; g-- {
				spread[0], spread[1], spread[2] = append(spread[0], 0), append(spread[1], 100*r.Normal()), append(spread[2], 0)
			}
			where = append(where, len(spread[0]))
			for j := range spread {
				spread[j] = append(spread[j], dense[j][k])
			}
		}
		gamma, lam := r.Float64(), r.Float64()
		a1, r1, err := GAEOverTurns(dense[:1], dense[1:2], dense[2:], gamma, lam)
		if err != nil {
			t.Fatal(err)
		}
		a2, r2, err := GAEOverTurns([][]float64{spread[0]}, [][]float64{spread[1]}, [][]float64{spread[2]}, gamma, lam)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range where {
			if a1[0][k] != a2[0][p] || r1[0][k] != r2[0][p] {
				t.Fatalf("trial %d token %d: dense (%v, %v), spread (%v, %v)", trial, k, a1[0][k], r1[0][k], a2[0][p], r2[0][p])
			}
		}
		for p := range spread[2] {
			if spread[2][p] == 0 && (a2[0][p] != 0 || r2[0][p] != 0) {
				t.Fatalf("trial %d: untrained position %d got (%v, %v)", trial, p, a2[0][p], r2[0][p])
			}
		}
	}
}

func TestFaultGAEOverTurnsRejectsBadInput(t *testing.T) {
	ok := func() (r, v, m [][]float64) {
		return [][]float64{{0, 1, 0}}, [][]float64{{0.5, 0.5, 0.5}}, [][]float64{{1, 1, 0}}
	}
	cases := []struct {
		name        string
		edit        func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64)
		gamma, lam  float64
		wantMessage string
	}{
		{"reward on an environment token", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			r[0][2] = 1
			return r, v, m
		}, 1, 1, "rewards[0][2] is 1 where trained_mask is 0"},
		{"fractional mask", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			m[0][1] = 0.5
			return r, v, m
		}, 1, 1, "trained_mask[0][1] is 0.5, want 0 or 1"},
		{"NaN reward", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			r[0][0] = math.NaN()
			return r, v, m
		}, 1, 1, "rewards[0][0] is NaN"},
		{"infinite value off the mask", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			v[0][2] = math.Inf(1)
			return r, v, m
		}, 1, 1, "values[0][2] is +Inf"},
		{"values short a row", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			return r, nil, m
		}, 1, 1, "values: 0 rows, want 1"},
		{"mask short a token", func(r, v, m [][]float64) ([][]float64, [][]float64, [][]float64) {
			return r, v, [][]float64{{1, 1}}
		}, 1, 1, "trained_mask: row 0 has 2 tokens, want 3"},
		{"gamma above 1", nil, 1.5, 1, "gamma 1.5"},
		{"NaN gamma", nil, math.NaN(), 1, "gamma NaN"},
		{"negative lam", nil, 1, -0.1, "lam -0.1"},
	}
	for _, c := range cases {
		r, v, m := ok()
		if c.edit != nil {
			r, v, m = c.edit(r, v, m)
		}
		_, _, err := GAEOverTurns(r, v, m, c.gamma, c.lam)
		if err == nil || !strings.Contains(err.Error(), c.wantMessage) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantMessage)
		}
	}
	r, v, m := ok()
	if _, _, err := GAEOverTurns(r, v, m, 1, 1); err != nil {
		t.Fatalf("the unedited input fails: %v", err)
	}
}
