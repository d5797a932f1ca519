//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The attention kernels (attn_amd64.s) with AVX-512; see scores and combine for what they
// compute.

//go:noescape
func attnScores4(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)

//go:noescape
func attnScores1(s, q, kt *float32, hs, nblk int)

//go:noescape
func attnComb4(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnComb1(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnPackBlock(dst, src *float32, stride, hs int)

var haveAttnAVX512 = cpu.X86.HasAVX512F
