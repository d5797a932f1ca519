package asmgen

// Memory operands of the constants in exp32_amd64.h's eight-lane table gc<>, which the
// float32 exponential, GELU and SwiGLU kernels include (gelu.go names them). exp32_gen.go
// writes the table and checks each operand's offset.
const (
	GeluCubic     = "gc<>+0(SB)"
	GeluScale     = "gc<>+32(SB)"
	Half          = "gc<>+64(SB)"
	One           = "gc<>+96(SB)"
	Two           = "gc<>+128(SB)"
	Four          = "gc<>+160(SB)"
	GeluCubic3    = "gc<>+192(SB)"
	AbsMask       = "gc<>+224(SB)"
	SignMask      = "gc<>+256(SB)"
	GeluClamp     = "gc<>+288(SB)"
	TanhSeriesMax = "gc<>+320(SB)"
	TanhC3        = "gc<>+352(SB)"
	TanhC5        = "gc<>+384(SB)"
	TanhC7        = "gc<>+416(SB)"
	Log2E         = "gc<>+448(SB)"
	RoundMagic    = "gc<>+480(SB)" // 1.5·2^23: adding and subtracting it rounds to an integer
	Ln2Hi         = "gc<>+512(SB)"
	Ln2Lo         = "gc<>+544(SB)"
	ExpP0         = "gc<>+576(SB)"
	ExpP1         = "gc<>+608(SB)"
	ExpP2         = "gc<>+640(SB)"
	ExpP3         = "gc<>+672(SB)"
	ExpP4         = "gc<>+704(SB)"
	ExpP5         = "gc<>+736(SB)"
	ExpBias       = "gc<>+768(SB)" // the float32 exponent bias, 127, as an integer
	TanhC9        = "gc<>+800(SB)"
	TanhC11       = "gc<>+832(SB)"
)

// Memory operands of expf32's limits in exp32_amd64.h: inputs are clamped to at most
// Exp32Max (89), and below Exp32Min (-104) the result is 0.
const (
	Exp32Max = "ec<>+0(SB)"
	Exp32Min = "ec<>+4(SB)"
)
