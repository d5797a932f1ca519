//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func dots8AVX2(q, kt *float32, hs, nblk int, out *float32)

//go:noescape
func attnAVAVX2(out, att, v *float32, stride, n, hs8 int)

//go:noescape
func attnDVAVX2(dv *float32, stride int, att, d *float32, n, hs8 int)

//go:noescape
func attnDQDKAVX2(dq, k, dk *float32, stride int, q, ds *float32, n, hs8 int)

var haveAttnAVX2 = cpu.X86.HasAVX2
