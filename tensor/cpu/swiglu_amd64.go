//go:build amd64 && !purego

package cpu

// The SwiGLU kernels (swiglu_amd64.s, written by swiglu_gen.go), which run sixteen lanes where
// llamaAVX512 allows (rowjob_amd64.go).

//go:noescape
func swigluFwd8AVX2(out, gate, up *float32, n int)

//go:noescape
func swigluBwd8AVX2(dgate, dup, gate, up, dout *float32, n int)

//go:noescape
func swigluFwd16AVX512(out, gate, up *float32, n int)

//go:noescape
func swigluBwd16AVX512(dgate, dup, gate, up, dout *float32, n int)

func swigluVector(out, gate, up []float32) int {
	done := 0
	if n := vectorLen(len(out), 16); llamaAVX512 && n > 0 {
		_, _ = gate[n-1], up[n-1]
		swigluFwd16AVX512(&out[0], &gate[0], &up[0], n)
		done = n
	}
	if n := vectorLen(len(out)-done, 8); n > 0 {
		_, _ = gate[done+n-1], up[done+n-1]
		swigluFwd8AVX2(&out[done], &gate[done], &up[done], n)
		done += n
	}
	return done
}

func swigluBackwardVector(dgate, dup, gate, up, dout []float32) int {
	done := 0
	if n := vectorLen(len(dout), 16); llamaAVX512 && n > 0 {
		_, _, _, _ = dgate[n-1], dup[n-1], gate[n-1], up[n-1]
		swigluBwd16AVX512(&dgate[0], &dup[0], &gate[0], &up[0], &dout[0], n)
		done = n
	}
	if n := vectorLen(len(dout)-done, 8); n > 0 {
		e := done + n - 1
		_, _, _, _, _ = dgate[e], dup[e], gate[e], up[e], dout[e]
		swigluBwd8AVX2(&dgate[done], &dup[done], &gate[done], &up[done], &dout[done], n)
		done += n
	}
	return done
}
