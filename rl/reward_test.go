package rl

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestCombinedReward(t *testing.T) {
	format, err := newFormatRegexp(`( \d)+` + regexp.QuoteMeta(EOSText))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCombined(
		Weighted{exactMatch{Field: "answer", RequireEOS: true}, 1},
		Weighted{format, 0.25},
		Weighted{eosBonus{}, -0.5},
	)
	if err != nil {
		t.Fatal(err)
	}
	metas := []Meta{{"answer": " 3 5"}, {"answer": " 3 5"}, {"answer": " 3 5"}, {"answer": " 3 5"}}
	comps := []string{" 3 5" + EOSText, " 3 6" + EOSText, " 3 5", "x" + EOSText}
	b, err := c.ScoreBatch(make([]string, 4), comps, metas)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.75, -0.25, 0, -0.5}
	for i := range want {
		if math.Abs(b.Total[i]-want[i]) > 1e-15 {
			t.Errorf("total[%d] = %v, want %v", i, b.Total[i], want[i])
		}
	}
	if b.Means["exact_match"] != 0.25 || b.Means["format"] != 0.5 || b.Means["eos"] != 0.75 || b.PerReward["eos"][2] != 0 {
		t.Errorf("means %v", b.Means)
	}
}

func TestRewardErrorsAreNamed(t *testing.T) {
	boom := RewardFunc{RewardName: "checker", Fn: func(_, c string, _ Meta) (float64, error) {
		if c == "bad" {
			return 0, errors.New("timed out")
		}
		return 1, nil
	}}
	nan := RewardFunc{RewardName: "nan", Fn: func(string, string, Meta) (float64, error) { return math.NaN(), nil }}
	c, _ := NewCombined(Weighted{boom, 1})
	_, err := c.ScoreBatch([]string{"", ""}, []string{"ok", "bad"}, []Meta{nil, nil})
	if err == nil || !strings.Contains(err.Error(), `reward "checker", row 1: timed out`) {
		t.Errorf("err %v", err)
	}
	c, _ = NewCombined(Weighted{nan, 1})
	if _, err := c.ScoreBatch([]string{""}, []string{""}, []Meta{nil}); err == nil || !strings.Contains(err.Error(), `"nan"`) {
		t.Errorf("err %v", err)
	}
	if _, err := (exactMatch{Field: "answer"}).Score("", "", Meta{}); err == nil || !strings.Contains(err.Error(), "answer") {
		t.Errorf("missing field: err %v", err)
	}
	if _, err := NewCombined(Weighted{boom, 1}, Weighted{boom, 2}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, err := NewCombined(Weighted{boom, math.Inf(1)}); err == nil {
		t.Error("infinite weight accepted")
	}
	if _, err := NewCombined(Weighted{nil, 1}); err == nil {
		t.Error("nil reward accepted")
	}
	if _, err := newFormatRegexp("("); err == nil {
		t.Error("bad pattern accepted")
	}
	if _, err := c.ScoreBatch([]string{""}, []string{"", ""}, []Meta{nil}); err == nil {
		t.Error("length mismatch accepted")
	}
}

// TestFaultAbsurdRewards: a score or weighted total too large for the advantages and the loss is
// refused at the reward, naming it and the row, rather than ending the run as a divergence.
func TestFaultAbsurdRewards(t *testing.T) {
	huge := RewardFunc{RewardName: "cmd", Fn: func(_, c string, _ Meta) (float64, error) {
		if c == "b" {
			return -1e308, nil
		}
		return 1e7, nil
	}}
	c, _ := NewCombined(Weighted{huge, 1})
	_, err := c.ScoreBatch([]string{"", ""}, []string{"a", "b"}, []Meta{nil, nil})
	if err == nil || !strings.Contains(err.Error(), `reward "cmd", row 1: score -1e+308 is beyond ±1e+12: scale the rewards down`) {
		t.Errorf("err %v", err)
	}
	c, _ = NewCombined(Weighted{huge, 1e6})
	_, err = c.ScoreBatch([]string{""}, []string{"a"}, []Meta{nil})
	if err == nil || !strings.Contains(err.Error(), "row 0: the weighted rewards sum to 1e+13, beyond ±1e+12") {
		t.Errorf("err %v", err)
	}
	c, _ = NewCombined(Weighted{huge, 1})
	if b, err := c.ScoreBatch([]string{""}, []string{"a"}, []Meta{nil}); err != nil || b.Total[0] != 1e7 {
		t.Errorf("a large but usable reward: %v, %v", b, err)
	}
}
