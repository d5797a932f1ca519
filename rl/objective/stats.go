package objective

import (
	"fmt"
	"math"
	"sort"
)

// Quantile returns the q-quantile (0 <= q <= 1) of xs with linear interpolation between the
// closest ranks (position q*(n-1) in the sorted order, as numpy and torch do). It returns NaN
// for an empty slice. xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo < 0 {
		lo = 0
	}
	if hi > len(s)-1 {
		hi = len(s) - 1
	}
	f := pos - float64(lo)
	return s[lo] + (s[hi]-s[lo])*f
}

// MeanStd returns the mean and the Bessel-corrected (n-1) standard deviation of xs; the std is
// 0 when there are fewer than two values (a single sample carries no spread).
func MeanStd(xs []float64) (mean, std float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(n-1))
}

// maskedMeanVar returns the mean and the Bessel-corrected variance of x over mask != 0, and the
// number of masked elements.
func maskedMeanVar(x, mask [][]float64) (mean, variance float64, n int) {
	var sum float64
	for i := range x {
		for t := range x[i] {
			if mask[i][t] != 0 {
				sum += x[i][t]
				n++
			}
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	mean = sum / float64(n)
	if n < 2 {
		return mean, 0, n
	}
	var ss float64
	for i := range x {
		for t := range x[i] {
			if mask[i][t] != 0 {
				d := x[i][t] - mean
				ss += d * d
			}
		}
	}
	return mean, ss / float64(n-1), n
}

// Zeros returns a rows x cols matrix of zeros.
func Zeros(rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	buf := make([]float64, rows*cols)
	for i := range m {
		m[i] = buf[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return m
}

// checkMatrix verifies that m is rows x cols with finite values, naming the field when not.
func checkMatrix(name string, m [][]float64, rows, cols int) error {
	if len(m) != rows {
		return fmt.Errorf("%s: %d rows, want %d", name, len(m), rows)
	}
	for i, r := range m {
		if len(r) != cols {
			return fmt.Errorf("%s: row %d has %d tokens, want %d", name, i, len(r), cols)
		}
		for t, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s[%d][%d] is %v, want a finite number", name, i, t, v)
			}
		}
	}
	return nil
}

// checkMask verifies that mask is rows x cols and holds only 0 and 1.
func checkMask(name string, m [][]float64, rows, cols int) error {
	if err := checkMatrix(name, m, rows, cols); err != nil {
		return err
	}
	for i, r := range m {
		for t, v := range r {
			if v != 0 && v != 1 {
				return fmt.Errorf("%s[%d][%d] is %v, want 0 or 1", name, i, t, v)
			}
		}
	}
	return nil
}

// checkSubmask verifies that sub is 0 wherever super is 0 (a loss mask inside the response).
func checkSubmask(subName string, sub [][]float64, superName string, super [][]float64) error {
	for i := range sub {
		for t := range sub[i] {
			if sub[i][t] != 0 && super[i][t] == 0 {
				return fmt.Errorf("%s[%d][%d] is 1 where %s is 0: the loss mask must lie inside the response", subName, i, t, superName)
			}
		}
	}
	return nil
}

// checkVector verifies that v has n finite values.
func checkVector(name string, v []float64, n int) error {
	if len(v) != n {
		return fmt.Errorf("%s: %d values, want %d", name, len(v), n)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s[%d] is %v, want a finite number", name, i, x)
		}
	}
	return nil
}

func maskCount(m [][]float64) int {
	n := 0
	for _, r := range m {
		for _, v := range r {
			if v != 0 {
				n++
			}
		}
	}
	return n
}

func cols(m [][]float64) int {
	if len(m) == 0 {
		return 0
	}
	return len(m[0])
}
