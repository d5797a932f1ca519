// Package logfmt shapes the numbers of vkgrad's log lines for a person to read.
//
// The metrics files keep every digit; only the log lines are shortened.
package logfmt

import (
	"fmt"
	"math"
)

// Count writes n with a k, M or B suffix past a thousand: 1.5k, 124.44M, 1.20B.
func Count(n int) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Rounded keeps four significant digits of x; zero, NaN and infinities are kept as they are.
func Rounded(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}
