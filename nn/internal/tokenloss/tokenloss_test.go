package tokenloss

import "testing"

// The sum runs in float32 from the first row: 1e8 + 1 + 1 stays 1e8 in float32, where a float64
// sum, or the other order, would keep the ones.
func TestMeanSumsInRowOrderInFloat32(t *testing.T) {
	if got, want := Mean([]float32{1e8, 1, 1, -1e8}), float32(0); got != want {
		t.Errorf("Mean = %v, want %v", got, want)
	}
	if got, want := Mean([]float32{1, 2, 3, 4}), float32(2.5); got != want {
		t.Errorf("Mean = %v, want %v", got, want)
	}
}
