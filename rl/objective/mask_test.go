package objective

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

const eos = 50256

func TestBuildMasksByPosition(t *testing.T) {
	comps := [][]int{
		{11, 12, eos, eos, eos},   // EOS then padding with the same id
		{eos, eos, eos, eos, eos}, // immediate EOS: one response token
		{11, 12, 13, 14, 15},      // truncated
		{11, 12, eos, eos, eos},   // generated 2 tokens only: truncated before the EOS
	}
	m, err := BuildMasks(comps, []int{5, 5, 5, 2}, eos, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1, 1, 1, 0, 0}, {1, 0, 0, 0, 0}, {1, 1, 1, 1, 1}, {1, 1, 0, 0, 0}}
	if !reflect.DeepEqual(m.Response, want) || !reflect.DeepEqual(m.Loss, want) {
		t.Errorf("response %v loss %v, want %v", m.Response, m.Loss, want)
	}
	if !reflect.DeepEqual(m.Truncated, []bool{false, false, true, true}) || !reflect.DeepEqual(m.Lengths, []int{3, 1, 5, 2}) {
		t.Errorf("truncated %v lengths %v", m.Truncated, m.Lengths)
	}
}

func TestBuildMasksForced(t *testing.T) {
	comps := [][]int{{7, 8, 9, eos, eos}, {7, 7, eos, eos, eos}}
	// A token set containing EOS forces only the response's EOS, never the padding.
	m, err := BuildMasks(comps, nil, eos, ForcedTokenSet{7: true, eos: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]float64{{0, 1, 1, 0, 0}, {0, 0, 0, 0, 0}}; !reflect.DeepEqual(m.Loss, want) {
		t.Errorf("loss %v, want %v", m.Loss, want)
	}
	if m.ForcedTokens != 5 {
		t.Errorf("forced %d, want 5", m.ForcedTokens)
	}
	// A template forces a position only when the sampled token follows the format.
	tmpl := ForcedTemplate{{Unforced, 8, Unforced, eos}, {Unforced, 8, eos}}
	m, err = BuildMasks(comps, nil, eos, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]float64{{1, 0, 1, 0, 0}, {1, 1, 0, 0, 0}}; !reflect.DeepEqual(m.Loss, want) {
		t.Errorf("template loss %v, want %v", m.Loss, want)
	}
	bad := ForcedFunc(func(int, []int) ([]bool, error) { return []bool{true}, nil })
	if _, err := BuildMasks(comps, nil, eos, bad); err == nil || !strings.Contains(err.Error(), "row 0") {
		t.Errorf("err %v", err)
	}
	if _, err := BuildMasks(comps, []int{6, 1}, eos, nil); err == nil || !strings.Contains(err.Error(), "generated lengths[0]") {
		t.Errorf("err %v", err)
	}
	if _, err := BuildMasks(comps, nil, eos, ForcedTemplate{{1}}); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("err %v", err)
	}
}

func TestTokenAlignment(t *testing.T) {
	a := [][]int{{1, 2, 3}, {4, 5, 6}}
	b := [][]int{{1, 2, 9}, {4, 5, 0}}
	mask := [][]float64{{1, 1, 1}, {1, 1, 0}}
	got, err := TokenAlignment(a, b, mask)
	if err != nil || got != 0.8 {
		t.Errorf("alignment %v err %v, want 0.8", got, err)
	}
	if _, err := TokenAlignment(a, b[:1], mask); err == nil {
		t.Error("row mismatch accepted")
	}
}

func TestMaskStatsAndDropNonFinite(t *testing.T) {
	comps := [][]int{{1, 2, eos, eos}, {1, 1, 1, 1}, {eos, eos, eos, eos}}
	m, err := BuildMasks(comps, nil, eos, ForcedTokenSet{2: true})
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stats()
	want := LengthStats{Mean: 8.0 / 3, Min: 1, Max: 4, TruncatedFraction: 1.0 / 3, ForcedFraction: 1.0 / 8}
	if s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
	logp := [][]float64{{-1, math.NaN(), -1, math.Inf(-1)}, {-1, -1, -1, -1}, {-1, -1, -1, -1}}
	n, err := DropNonFinite(logp, m.Loss)
	if err != nil || n != 0 {
		// the NaN sits on a forced (already masked-out) token; the -Inf on padding
		t.Errorf("dropped %d, err %v; want 0", n, err)
	}
	logp[1][2] = math.NaN()
	if n, _ := DropNonFinite(logp, m.Loss); n != 1 || m.Loss[1][2] != 0 || logp[1][2] != 0 || logp[0][1] != 0 || logp[0][3] != 0 {
		t.Errorf("dropped %d, loss mask %v, logp %v", n, m.Loss, logp)
	}
}
