package cpu

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// rope_arm64.s's generator is named here, in a file every architecture builds, so that
// go generate on any machine rewrites it.
//
//go:generate go run rope_neon_gen.go

// ropeRow rotates (or, backward, rotates back and accumulates) the first rotHeads heads of
// row r at its position and copies (or accumulates) the rest.
func ropeRow(j *llamaJob, r int) {
	D, half := j.C/j.H, j.C/j.H/2
	pos := j.pos0 + r%j.T
	cos, sin := j.table[pos*D:pos*D+half], j.table[pos*D+half:(pos+1)*D]
	row := r * j.C
	for h := 0; h < j.H; h++ {
		base := row + h*D
		if j.kind == ropeForward {
			x, o := j.inp[base:base+D], j.out[base:base+D]
			if h >= j.rotHeads {
				copy(o, x)
				continue
			}
			ropeRotate(o, x, cos, sin)
			continue
		}
		g, dx := j.dout[base:base+D], j.dinp[base:base+D]
		if h >= j.rotHeads {
			addTo(dx, g)
			continue
		}
		ropeRotateBack(dx, g, cos, sin)
	}
}

// ropeRotate writes one head x rotated by the angles whose cosines and sines are given: the
// pairs are (x_i, x_{i+D/2}).
func ropeRotate(o, x, cos, sin []float32) {
	half := len(cos)
	o, x, sin = o[:2*half], x[:2*half], sin[:half]
	for i := ropeVector(o, x, cos, sin); i < half; i++ {
		x0, x1 := x[i], x[i+half]
		o[i] = float32(x0*cos[i]) - float32(x1*sin[i])
		o[i+half] = float32(x1*cos[i]) + float32(x0*sin[i])
	}
}

// ropeRotateBack accumulates into dx the gradient g of one head rotated back.
func ropeRotateBack(dx, g, cos, sin []float32) {
	half := len(cos)
	dx, g, sin = dx[:2*half], g[:2*half], sin[:half]
	for i := ropeBackwardVector(dx, g, cos, sin); i < half; i++ {
		g0, g1 := g[i], g[i+half]
		dx[i] += float32(g0*cos[i]) + float32(g1*sin[i])
		dx[i+half] += float32(g1*cos[i]) - float32(g0*sin[i])
	}
}

// ropeArgs checks RoPE's dimensions and returns the head width.
func ropeArgs(op string, N, T, pos0, H, rotHeads, rowLen int) int {
	dims(op, N, T, pos0, H, rotHeads, rowLen)
	if H == 0 || rowLen%H != 0 || (rowLen/H)%2 != 0 || rotHeads > H || (N > 0 && (T == 0 || N%T != 0)) {
		panic(fmt.Sprintf("cpu: %s: rows of %d in %d heads (%d rotated), N=%d T=%d: want even heads and N a multiple of T", op, rowLen, H, rotHeads, N, T))
	}
	return rowLen / H
}

// RoPEForward implements tensor.Backend.
func (b *Backend) RoPEForward(out, inp, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	defer b.unlock(b.lock("RoPEForward"))
	const op = "RoPEForward"
	D := ropeArgs(op, N, T, pos0, H, rotHeads, rowLen)
	if N == 0 {
		return
	}
	b.llama = llamaJob{kind: ropeForward, n: N, C: rowLen, rows: rowsPer(rowLen), T: T, pos0: pos0, H: H, rotHeads: rotHeads,
		out: f32(op, "out", out, N*rowLen), inp: f32(op, "inp", inp, N*rowLen), table: f32(op, "table", table, (pos0+T)*D)}
	b.runLlama(true)
}

// RoPEBackward implements tensor.Backend.
func (b *Backend) RoPEBackward(dinp, dout, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	defer b.unlock(b.lock("RoPEBackward"))
	const op = "RoPEBackward"
	D := ropeArgs(op, N, T, pos0, H, rotHeads, rowLen)
	if N == 0 {
		return
	}
	b.llama = llamaJob{kind: ropeBackward, n: N, C: rowLen, rows: rowsPer(rowLen), T: T, pos0: pos0, H: H, rotHeads: rotHeads,
		dinp: f32(op, "dinp", dinp, N*rowLen), dout: f32(op, "dout", dout, N*rowLen), table: f32(op, "table", table, (pos0+T)*D)}
	b.runLlama(true)
}
