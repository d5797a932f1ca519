package cpu

import (
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// The generators of the exponential and GELU kernels (exp32_amd64.h, gelu_amd64.s and
// exp32_arm64.s) are named here, in a file every architecture builds, so that go generate on
// any machine rewrites them all.
//
//go:generate go run exp32_gen.go
//go:generate go run gelu_gen.go
//go:generate go run exp32_neon_gen.go

// GELU in float32 steps, four to sixteen lanes at a time in the vector kernels. Every product
// that feeds a sum, even through a variable, is wrapped in float32() so no compiler fuses it
// into a multiply-add (arm64's does, across statements): the portable code on every
// architecture and the assembly then compute the same bits. tanh(u) comes from one exponential,
// e = exp(2|u|): tanh = 1 - 2/(e+1), sech² = 4e/(e+1)², with a series near 0 where the
// subtraction cancels. Results are within a few float32 ulps of the exact GELU.

const (
	geluCubic  = float32(0.044715)
	geluCubic3 = float32(3 * 0.044715)
	// |u| is clamped here: tanh is 1 in float32 well before, and exp(2|u|) stays finite.
	geluClamp = float32(15)
	// tanh series below this |u| (to a¹¹; the next term is below 2e-9 relative), where
	// 1 - 2/(e+1) would lose bits to cancellation.
	geluSeriesMax = float32(0.25)
	tanhC3        = float32(-1.0 / 3)
	tanhC5        = float32(2.0 / 15)
	tanhC7        = float32(-17.0 / 315)
	tanhC9        = float32(62.0 / 2835)
	tanhC11       = float32(-1382.0 / 155925)

	// exp32: 2^k e^r with k = round(x log2e), r = x - k ln2 (ln2 split in two so k ln2hi is
	// exact) and e^r by a degree-7 polynomial (Cephes' expf coefficients) on |r| <= ln2/2.
	exp32Log2e = float32(1.44269504088896341)
	exp32Round = float32(12582912) // 1.5·2²³: adding then subtracting it rounds to an integer
	exp32Ln2Hi = float32(0.693359375)
	exp32Ln2Lo = float32(-2.12194440e-4)
	exp32P0    = float32(1.9875691500e-4)
	exp32P1    = float32(1.3981999507e-3)
	exp32P2    = float32(8.3334519073e-3)
	exp32P3    = float32(4.1665795894e-2)
	exp32P4    = float32(1.6666665459e-1)
	exp32P5    = float32(5.0000001201e-1)
)

// geluScale is llm.c's GELU_SCALING_FACTOR, sqrtf(2.0f / M_PI): 2/pi is rounded to float before
// the square root (one ulp below float32(sqrt(2/pi))).
var geluScale = float32(math.Sqrt(float64(float32(2 / math.Pi))))

// exp32 is e^x for 0 <= x <= 2·geluClamp, in float32 steps (about 1 ulp).
func exp32(x float32) float32 {
	p, k := expPoly(x)
	return float32(p * math.Float32frombits(uint32(k+127)<<23))
}

// expPoly is exp32's reduction and polynomial: e^x = p·2^k.
func expPoly(x float32) (p float32, k int32) {
	kf := float32(float32(x*exp32Log2e)+exp32Round) - exp32Round
	r := float32(x-float32(kf*exp32Ln2Hi)) - float32(kf*exp32Ln2Lo)
	p = float32(exp32P0*r) + exp32P1
	p = float32(p*r) + exp32P2
	p = float32(p*r) + exp32P3
	p = float32(p*r) + exp32P4
	p = float32(p*r) + exp32P5
	p = float32(float32(float32(p*r)*r)+r) + 1
	return p, int32(kf)
}

// geluU is llm.c's GELU argument sqrt(2/pi)·(x + 0.044715x³).
func geluU(x float32) float32 {
	cube := float32(float32(float32(geluCubic*x)*x) * x)
	return geluScale * (x + cube)
}

// tanhSech2 returns tanh(u) and sech²(u).
func tanhSech2(u float32) (t, sech2 float32) {
	a := min(math.Float32frombits(math.Float32bits(u)&^(1<<31)), geluClamp)
	e := exp32(a + a)
	r := 1 / (e + 1)
	t = 1 - float32(2*r)
	sech2 = float32(float32(float32(4*e)*r) * r)
	if a < geluSeriesMax {
		s := float32(a * a)
		q := float32(s*tanhC11) + tanhC9
		q = float32(q*s) + tanhC7
		q = float32(q*s) + tanhC5
		q = float32(q*s) + tanhC3
		q = float32(q * s)
		t = a + float32(a*q)
	}
	return math.Float32frombits(math.Float32bits(t) | math.Float32bits(u)&(1<<31)), sech2
}

// geluForwardGo sets out = 0.5x(1 + tanh(u)).
func geluForwardGo(out, inp []float32) {
	out = out[:len(inp)]
	for i, x := range inp {
		t, _ := tanhSech2(geluU(x))
		out[i] = float32(0.5*x) * (1 + t)
	}
}

// geluBackwardGo accumulates dinp += gelu'(x)·dout with llm.c's formula for gelu'.
func geluBackwardGo(dinp, inp, dout []float32) {
	dinp, dout = dinp[:len(inp)], dout[:len(inp)]
	for i, x := range inp {
		t, sech2 := tanhSech2(geluU(x))
		slope := float32(float32(float32(float32(x*0.5)*sech2)*geluScale) * (1 + float32(float32(geluCubic3*x)*x)))
		grad := float32(0.5*(1+t)) + slope
		dinp[i] += float32(grad * dout[i])
	}
}

// GeluForward implements tensor.Backend.
func (b *Backend) GeluForward(out, inp *tensor.Tensor) {
	defer b.unlock(b.lock("GeluForward"))
	n := out.Numel()
	b.ew = ewJob{kind: ewGeluF, n: n, out: f32("GeluForward", "out", out, n), x: f32("GeluForward", "inp", inp, n)}
	b.runEW(n)
}

// GeluBackward implements tensor.Backend.
func (b *Backend) GeluBackward(dinp, inp, dout *tensor.Tensor) {
	defer b.unlock(b.lock("GeluBackward"))
	n := dinp.Numel()
	b.ew = ewJob{kind: ewGeluB, n: n, out: f32("GeluBackward", "dinp", dinp, n),
		x: f32("GeluBackward", "inp", inp, n), y: f32("GeluBackward", "dout", dout, n)}
	b.runEW(n)
}
