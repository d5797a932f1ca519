package cpu

import "math"

// logf and sqrtf evaluate in float64 and round, so they are correctly rounded. The hot
// exponentials (softmax, GELU) use float32 polynomials within about an ulp instead, eight lanes
// at a time; the RL log-softmax keeps float64 exponentials (expSlice) for its small differences.

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

// expShiftSum sets dst[i] = e^(src[i] - shift) (expf32) and returns their float32 sum, split
// over eight lanes (element i in lane i%8) and added with lanes8Sum, as the vector kernel
// does. dst may be src.
func expShiftSum(dst, src []float32, shift float32) float32 {
	dst = dst[:len(src)]
	var acc [8]float32
	n := expShiftSumVector(dst, src, shift, &acc)
	for i := n; i < len(src); i++ {
		e := expf32(src[i] - shift)
		dst[i] = e
		acc[i%8] += e
	}
	return lanes8Sum(&acc)
}

// expf32 is e^x in float32 steps (within about an ulp, denormal results included): exp32's
// reduction and polynomial, with 2^k applied in two halves so that k down to -150 works.
// Below -104 the result is 0 (e^-104 is under half the smallest denormal); NaN stays NaN.
func expf32(x float32) float32 {
	if x < -104 {
		return 0
	}
	p, ki := expPoly(min(x, 89)) // beyond 88.73 the result overflows to +Inf either way
	k1 := ki >> 1
	k2 := ki - k1
	p = float32(p * math.Float32frombits(uint32(k1+127)<<23))
	return float32(p * math.Float32frombits(uint32(k2+127)<<23))
}

// maxf32 returns the largest of x, skipping NaN as llm.c's `if (v > maxval)` loop does (a NaN
// logit still makes its row NaN through its exponential). Four running maxima: max is exact,
// so they give the same value as a sequential scan.
func maxf32(x []float32) float32 {
	m0, i := maxVector(x)
	m1 := float32(math.Inf(-1))
	m2, m3 := m1, m1
	for ; i+4 <= len(x); i += 4 { // from the kernel's last element
		if v := x[i]; v > m0 {
			m0 = v
		}
		if v := x[i+1]; v > m1 {
			m1 = v
		}
		if v := x[i+2]; v > m2 {
			m2 = v
		}
		if v := x[i+3]; v > m3 {
			m3 = v
		}
	}
	for ; i < len(x); i++ {
		if v := x[i]; v > m0 {
			m0 = v
		}
	}
	if m1 > m0 {
		m0 = m1
	}
	if m3 > m2 {
		m2 = m3
	}
	if m2 > m0 {
		m0 = m2
	}
	return m0
}
