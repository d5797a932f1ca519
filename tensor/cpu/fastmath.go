package cpu

import "math"

// Transcendentals evaluate in float64 and round to float32, so they return the correctly
// rounded float32 result (as glibc's expf/tanhf/coshf do) in all but rare near-ties. They build
// on math.Exp, whose amd64 assembly is several times faster than math.Tanh and math.Cosh.

func exp64(x float64) float64 { return math.Exp(x) }

func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// tanh64 returns tanh(y) with relative error below 1e-13.
func tanh64(y float64) float64 {
	a := math.Abs(y)
	switch {
	case a < 0.0625:
		// Series; the first omitted term is below 1e-14 relative.
		y2 := a * a
		return math.Copysign(a*(1+y2*(-1.0/3+y2*(2.0/15+y2*(-17.0/315+y2*(62.0/2835))))), y)
	case a < 20:
		e := math.Exp(a)
		return math.Copysign(1-2/(e*e+1), y)
	case a != a:
		return y // NaN
	}
	return math.Copysign(1, y) // tanh(20) rounds to 1 in float64
}

// tanhf is inlined into loops; the common case is branch-free apart from the range test (a
// data-dependent sign branch here costs more than the exponential).
func tanhf(x float32) float32 {
	a := math.Abs(float64(x))
	if !(a >= 0.0625 && a < 20) {
		return float32(tanh64(float64(x)))
	}
	e := math.Exp(a)
	return float32(math.Copysign(1-2/(e*e+1), float64(x)))
}

// tanhCoshf returns tanhf(x) and coshf(x) from one exponential.
func tanhCoshf(x float32) (float32, float32) {
	a := math.Abs(float64(x))
	if !(a >= 0.0625 && a < 20) {
		return float32(tanh64(float64(x))), float32(math.Cosh(float64(x)))
	}
	e := math.Exp(a)
	return float32(math.Copysign(1-2/(e*e+1), float64(x))), float32(0.5 * (e + 1/e))
}

func logf(x float32) float32  { return float32(math.Log(float64(x))) }
func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// expSliceGo is the portable expSlice: math.Exp with the vector kernel's clamp to [-708, 709].
func expSliceGo(x []float64) {
	for i, v := range x {
		x[i] = math.Exp(min(max(v, -708), 709))
	}
}

// expBlock is the number of values a loop hands to expSlice at a time (a stack buffer).
const expBlock = 256

// expShiftSum sets dst[i] = expf(src[i] - shift) and returns their float32 sum, added in order
// as llm.c's softmax loops do. dst may be src.
func expShiftSum(dst, src []float32, shift float32) float32 {
	dst = dst[:len(src)]
	var buf [expBlock]float64
	var sum float32
	for lo := 0; lo < len(src); lo += expBlock {
		xs := src[lo:min(lo+expBlock, len(src))]
		b := buf[:len(xs)]
		for i, v := range xs {
			b[i] = float64(v - shift)
		}
		expSlice(b)
		d := dst[lo : lo+len(b)]
		for i, e := range b {
			f := float32(e)
			d[i] = f
			sum += f
		}
	}
	return sum
}

// maxf32 returns the largest of x (NaN if any is NaN); max is exact, so the four running
// maxima give the same result as a sequential scan.
func maxf32(x []float32) float32 {
	m0 := float32(math.Inf(-1))
	m1, m2, m3 := m0, m0, m0
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0, m1, m2, m3 = max(m0, x[i]), max(m1, x[i+1]), max(m2, x[i+2]), max(m3, x[i+3])
	}
	for ; i < len(x); i++ {
		m0 = max(m0, x[i])
	}
	return max(m0, m1, m2, m3)
}
