package sample

import "testing"

func TestDefaultsAreValid(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("the zero Options (greedy) should be valid: %v", err)
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("DefaultOptions: %v", err)
	}
	if (Options{Temperature: 1}).Truncates() {
		t.Error("top-p 0 (unset) must not truncate")
	}
	if err := (Options{TopP: 1.5}).Validate(); err == nil {
		t.Error("top-p 1.5 should be refused")
	}
	// A seed fixes the draws.
	a, b := NewRNG(7), NewRNG(7)
	for range 5 {
		if a.Float64() != b.Float64() {
			t.Fatal("two generators from one seed differ")
		}
	}
}
