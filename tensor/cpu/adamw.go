package cpu

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// adamw_arm64.s's generator is named here, in a file every architecture builds, so that
// go generate on any machine rewrites it.
//
//go:generate go run adamw_neon_gen.go

// adamJob is llm.c's AdamW update over chunks of ewChunk parameters.
type adamJob struct {
	p, g, m, v                      []float32
	lr, b1, b2, eps, wd, c1, c2, gs float32
	vector                          bool // use the vector kernel (tests compare both)
}

// adamVectorOn lets tests run the portable loop where the vector kernel exists.
var adamVectorOn = true

func (j *adamJob) run(_, c int) {
	lo := c * ewChunk
	hi := min(lo+ewChunk, len(j.p))
	p, g, m, v := j.p[lo:hi], j.g[lo:hi], j.m[lo:hi], j.v[lo:hi]
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	b1, b2, gs := j.b1, j.b2, j.gs
	if j.vector {
		c := [10]float32{gs, b1, 1 - b1, b2, 1 - b2, j.c1, j.c2, j.eps, j.wd, j.lr}
		n := adamVector(p, g, m, v, &c)
		p, g, m, v = p[n:], g[n:], m[n:], v[n:]
	}
	adamScalar(p, g, m, v, j)
}

// adamScalar is llm.c's update loop, operation for operation.
func adamScalar(p, g, m, v []float32, j *adamJob) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	b1, b2, gs := j.b1, j.b2, j.gs
	for i := range p {
		param := p[i]
		grad := g[i] * gs
		// Products rounded before they are added, as the vector kernels do (arm64 would fuse them).
		mi := float32(b1*m[i]) + float32((1-b1)*grad)
		vi := float32(b2*v[i]) + float32(float32((1-b2)*grad)*grad)
		mhat := mi / j.c1
		vhat := vi / j.c2
		m[i] = mi
		v[i] = vi
		p[i] -= float32(j.lr * (mhat/(sqrtf(vhat)+j.eps) + float32(j.wd*param)))
	}
}

// AdamW implements tensor.Backend.
func (b *Backend) AdamW(params, grads, m, v *tensor.Tensor, p tensor.AdamWParams) {
	defer b.unlock(b.lock("AdamW"))
	if p.Step < 1 {
		panic(fmt.Sprintf("cpu: AdamW: step %d, want >= 1", p.Step))
	}
	n := params.Numel()
	gs := float32(1)
	if p.GradSumSq != nil && p.MaxNorm > 0 {
		norm := sqrtf(f32("AdamW", "GradSumSq", p.GradSumSq, 1)[0])
		if s := p.MaxNorm / (norm + 1e-6); s < 1 {
			gs = s
		}
	}
	b.adam = adamJob{
		p: f32("AdamW", "params", params, n), g: f32("AdamW", "grads", grads, n),
		m: f32("AdamW", "m", m, n), v: f32("AdamW", "v", v, n),
		lr: p.LR, b1: p.Beta1, b2: p.Beta2, eps: p.Eps, wd: p.WeightDecay, gs: gs,
		c1:     1 - float32(math.Pow(float64(p.Beta1), float64(p.Step))),
		c2:     1 - float32(math.Pow(float64(p.Beta2), float64(p.Step))),
		vector: adamVectorOn,
	}
	b.pool.do(&b.adam, ceilDiv(n, ewChunk))
	b.adam = adamJob{}
}
