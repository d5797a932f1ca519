//go:build !amd64 || purego

package cpu

const haveAttnAVX512 = false

func attnScores4(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int) {
	panic("unreachable")
}
func attnScores1(s, q, kt *float32, hs, nblk int) { panic("unreachable") }
func attnComb4(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int) {
	panic("unreachable")
}
func attnComb1(out, w *float32, wstep int, x *float32, xs, n, hs, acc int) { panic("unreachable") }
func attnPackBlock(dst, src *float32, stride, hs int)                      { panic("unreachable") }
