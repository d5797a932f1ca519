//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The attention kernels (attention_amd64.s, written by attention_gen.go); scores, combine and packKeys
// say what they compute.

//go:noescape
func attnScores4AVX512(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)

//go:noescape
func attnScores1AVX512(s, q, kt *float32, hs, nblk int)

//go:noescape
func attnComb4AVX512(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnComb1AVX512(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnPackBlock(dst, src *float32, stride, hs int)

//go:noescape
func attnPackBlockAVX2(dst, src *float32, stride, hs int)

//go:noescape
func attnScores4AVX2(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)

//go:noescape
func attnScores1AVX2(s, q, kt *float32, hs, nblk int)

//go:noescape
func attnComb4AVX2(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnComb1AVX2(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)

// attnKernelSets lists the vector attention kernels this CPU can run, best first.
var attnKernelSets = func() []*attnKernels {
	var ks []*attnKernels
	if cpu.X86.HasAVX512F {
		ks = append(ks, &attnKernels{name: "avx512", scores4: attnScores4AVX512, scores1: attnScores1AVX512,
			comb4: attnComb4AVX512, comb1: attnComb1AVX512, pack: attnPackBlock})
	}
	if cpu.X86.HasAVX2 {
		ks = append(ks, &attnKernels{name: "avx2", scores4: attnScores4AVX2, scores1: attnScores1AVX2,
			comb4: attnComb4AVX2, comb1: attnComb1AVX2, pack: attnPackBlockAVX2})
	}
	return ks
}()
