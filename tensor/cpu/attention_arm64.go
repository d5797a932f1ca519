//go:build arm64 && !purego

package cpu

// The NEON attention kernels (attention_arm64.s, written by attention_neon_gen.go); scores and
// combine say what they compute. Keys are packed by the portable loop.

//go:noescape
func attnScores4NEON(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)

//go:noescape
func attnScores1NEON(s, q, kt *float32, hs, nblk int)

//go:noescape
func attnComb4NEON(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)

//go:noescape
func attnComb1NEON(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)

// attnKernelSets lists the vector attention kernels: every arm64 CPU has NEON.
var attnKernelSets = []*attnKernels{{name: "neon", scores4: attnScores4NEON, scores1: attnScores1NEON,
	comb4: attnComb4NEON, comb1: attnComb1NEON}}
