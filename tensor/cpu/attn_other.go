//go:build !amd64 || purego

package cpu

const haveAttnAVX2 = false

func dots8AVX2(q, kt *float32, hs, nblk int, out *float32)                    { panic("unreachable") }
func attnAVAVX2(out, att, v *float32, stride, n, hs8 int)                     { panic("unreachable") }
func attnDVAVX2(dv *float32, stride int, att, d *float32, n, hs8 int)         { panic("unreachable") }
func attnDQDKAVX2(dq, k, dk *float32, stride int, q, ds *float32, n, hs8 int) { panic("unreachable") }
