package tensor

import (
	"fmt"
	"math"
)

// Precision is the arithmetic of a backend's matrix products: float32 operands, or operands
// rounded to a 16-bit format (round to nearest even) and multiplied with float32 sums, as tensor
// cores and llm.c's bf16 kernels do. The product of two 16-bit values is exact in float32, so a
// backend that rounds its operands gets the same products as one whose hardware reads 16-bit
// operands; only the order of the sums differs.
type Precision int

const (
	FP32 Precision = iota // float32 operands: the default
	BF16                  // bfloat16: 8 significant bits, float32's range
	FP16                  // IEEE binary16: 11 significant bits, largest finite 65504, so needs loss scaling
)

// Precisions are the names ParsePrecision accepts, in order.
var Precisions = []string{"fp32", "bf16", "fp16"}

// String is the precision's flag name.
func (p Precision) String() string {
	if p >= 0 && int(p) < len(Precisions) {
		return Precisions[p]
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision reads a precision's flag name: fp32, bf16 or fp16.
func ParsePrecision(s string) (Precision, error) {
	for i, name := range Precisions {
		if s == name {
			return Precision(i), nil
		}
	}
	return FP32, fmt.Errorf("unknown precision %q (want fp32, bf16 or fp16)", s)
}

// ProductRounder is a backend whose matrix products can round their operands to a 16-bit
// format. SetProductPrecision applies to the products queued after it; it fails, saying why,
// where the backend cannot compute in p.
type ProductRounder interface {
	SetProductPrecision(p Precision) error
}

// RoundBfloat16 rounds v to the nearest bfloat16 (ties to even), returned as a float32.
// NaN stays NaN; values beyond bfloat16's range become infinities, as float32's do.
func RoundBfloat16(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 {
		return v // NaN: rounding the payload could carry it into an infinity
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// RoundFloat16 rounds v to the nearest IEEE binary16 value (ties to even, subnormals kept,
// overflow to infinity), returned as a float32.
func RoundFloat16(v float32) float32 {
	b := math.Float32bits(v)
	abs := b & 0x7fffffff
	switch {
	case abs > 0x7f800000:
		return v // NaN
	case abs >= 0x477ff000: // 65520 and above round to infinity
		return math.Float32frombits(b&0x80000000 | 0x7f800000)
	case abs < 0x38800000: // below binary16's smallest normal, 2^-14: a multiple of 2^-24
		const quantum = 1.0 / (1 << 24)
		f := float64(math.Float32frombits(abs)) / quantum
		r := math.RoundToEven(f) * quantum
		return math.Float32frombits(b&0x80000000 | math.Float32bits(float32(r)))
	}
	b += 0xfff + (b>>13)&1 // 13 of float32's 23 fraction bits go
	return math.Float32frombits(b &^ 0x1fff)
}

// SetProductPrecision makes b's matrix products compute in p: through ProductRounder, or for
// FP32 on a backend that only has float32 products, nothing. The error names the backend.
func SetProductPrecision(b Backend, p Precision) error {
	r, ok := b.(ProductRounder)
	if !ok {
		if p == FP32 {
			return nil
		}
		return fmt.Errorf("%s computes its matrix products in fp32 only, not %v", b.Name(), p)
	}
	if err := r.SetProductPrecision(p); err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	return nil
}

// HalfWeight is a bfloat16 copy of a float32 weight matrix held by a backend
// (HalfWeightMatMuler.NewHalfWeight): half the bytes for a product to read. It lives until
// Free.
type HalfWeight interface {
	// Shape is the matrix's rows and columns, those of the tensor it was made from.
	Shape() (rows, cols int)
	// Bytes is the memory the copy holds.
	Bytes() int64
	// Refresh rounds w, a float32 matrix of the copy's shape, into the copy again: after the
	// weights it copies have changed.
	Refresh(w *Tensor) error
	// Free releases the copy; it must not be used afterwards.
	Free()
}

// HalfWeightMatMuler is a backend that can multiply by bfloat16 copies of weight matrices,
// for products bound by reading the weights (a decoding step of a few rows). A product with a
// copy gives the bits of MatMul in BF16 precision on the float32 weights it copies; callers
// use it when ProductPrecision is BF16 and fall back to MatMul on backends without it.
type HalfWeightMatMuler interface {
	// ProductPrecision is the precision MatMul's operands are rounded to.
	ProductPrecision() Precision
	// NewHalfWeight makes a bfloat16 copy of w, a float32 tensor of two dimensions (rows, cols).
	NewHalfWeight(w *Tensor) (HalfWeight, error)
	// MatMulHalf is MatMul with b the matrix w copies, stored (N, K): p.TransB must be set
	// and p.Batch at most 1. Operands are bfloat16 whatever the product precision.
	MatMulHalf(out, a *Tensor, w HalfWeight, bias *Tensor, p MatMulParams)
	// HalfWeightRows is the most rows of a for which MatMulHalf is faster than MatMul on the
	// float32 weights (it reads the copy in place for those, and widens it for more); 0 when
	// it is never faster.
	HalfWeightRows() int
}

// HalfWeightsFor returns b as a HalfWeightMatMuler when it is one, its products compute in
// BF16 (the precision whose bits a bfloat16 copy gives) and a copy can make some product
// faster (HalfWeightRows > 0).
func HalfWeightsFor(b Backend) (HalfWeightMatMuler, bool) {
	h, ok := b.(HalfWeightMatMuler)
	if !ok || h.ProductPrecision() != BF16 || h.HalfWeightRows() == 0 {
		return nil, false
	}
	return h, true
}
