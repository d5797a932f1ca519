package cpu

import "math"

// Transcendentals evaluate in float64 and round to float32, so they return the correctly
// rounded float32 result (as glibc's expf/tanhf/coshf do) in all but rare near-ties.

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

// expShiftSum2 is expShiftSum on two rows of equal length at once: two independent chains of
// additions, each in its row's order.
func expShiftSum2(dstA, srcA []float32, shiftA float32, dstB, srcB []float32, shiftB float32) (float32, float32) {
	dstA, srcB, dstB = dstA[:len(srcA)], srcB[:len(srcA)], dstB[:len(srcA)]
	var buf [2 * expBlock]float64
	var sa, sb float32
	for lo := 0; lo < len(srcA); lo += expBlock {
		xa := srcA[lo:min(lo+expBlock, len(srcA))]
		xb := srcB[lo : lo+len(xa)]
		ba, bb := buf[:len(xa)], buf[expBlock:expBlock+len(xa)]
		for i, v := range xa {
			ba[i] = float64(v - shiftA)
			bb[i] = float64(xb[i] - shiftB)
		}
		expSlice(buf[:expBlock+len(xa)]) // both rows (and any gap) in one call
		da, db := dstA[lo:lo+len(xa)], dstB[lo:lo+len(xa)]
		for i, e := range ba {
			fa, fb := float32(e), float32(bb[i])
			da[i], db[i] = fa, fb
			sa += fa
			sb += fb
		}
	}
	return sa, sb
}

// maxf32 returns the largest of x, skipping NaN as llm.c's `if (v > maxval)` loop does (a NaN
// logit still makes its row NaN through its exponential). Four running maxima: max is exact,
// so they give the same value as a sequential scan.
func maxf32(x []float32) float32 {
	m0 := float32(math.Inf(-1))
	m1, m2, m3 := m0, m0, m0
	i := 0
	for ; i+4 <= len(x); i += 4 {
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
