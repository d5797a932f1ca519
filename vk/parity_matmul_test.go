package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

const f32eps = 1.0 / (1 << 24) // unit roundoff of float32

type mmCase struct {
	M, N, K, batch      int
	ta, tb, bias, accum bool
	aligned             bool // operands start at multiples of 4 elements (the vec4 loads)
}

func (c mmCase) String() string {
	return fmt.Sprintf("M%d_N%d_K%d_b%d_ta%v_tb%v_bias%v_acc%v", c.M, c.N, c.K, c.batch, c.ta, c.tb, c.bias, c.accum)
}

// checkMatMul runs c on vb and on the CPU backend with the same random inputs and compares every
// output within 4u·sqrt(K+2)·S, where S = sum_k |a_ik b_kj| + |bias_j| + |out_ij| (the latter
// when accumulating): the error of two float32 sums of K+2 terms in different orders stays far
// below that, while a wrong index or a missing term is of the order of S.
func checkMatMul(t *testing.T, vb *Backend, cb tensor.Backend, c mmCase, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	batch := max(c.batch, 1)
	ha, hb := randVec(r, batch*c.M*c.K), randVec(r, batch*c.K*c.N)
	hbias, hout := randVec(r, c.N), randVec(r, batch*c.M*c.N)
	p := tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.ta, TransB: c.tb, Accumulate: c.accum, Batch: c.batch}

	// Odd offsets into larger tensors, so that windows start unaligned.
	oa, ob, oo := 3, 5, 1
	if c.aligned {
		oa, ob, oo = 4, 8, 0
	}
	va, vbm, vout := onDevice(t, vb, ha, oa), onDevice(t, vb, hb, ob), onDevice(t, vb, hout, oo)
	var vbias, cbias *tensor.Tensor
	if c.bias {
		vbias = onDevice(t, vb, hbias, 7)
		cbias = mustHost(t, cb, hbias)
	}
	vb.MatMul(vout, va, vbm, vbias, p)
	got := download(t, vb, vout)
	cout := mustHost(t, cb, hout)
	cb.MatMul(cout, mustHost(t, cb, ha), mustHost(t, cb, hb), cbias, p)
	want, err := tensor.ToHost(cout)
	if err != nil {
		t.Fatal(err)
	}

	at := func(z, m, k int) float64 {
		if c.ta {
			return float64(ha[z*c.M*c.K+k*c.M+m])
		}
		return float64(ha[z*c.M*c.K+m*c.K+k])
	}
	bt := func(z, k, n int) float64 {
		if c.tb {
			return float64(hb[z*c.K*c.N+n*c.K+k])
		}
		return float64(hb[z*c.K*c.N+k*c.N+n])
	}
	for z := range batch {
		for m := range c.M {
			for n := range c.N {
				s := 0.0
				for k := range c.K {
					s += math.Abs(at(z, m, k) * bt(z, k, n))
				}
				if c.bias {
					s += math.Abs(float64(hbias[n]))
				}
				i := z*c.M*c.N + m*c.N + n
				if c.accum {
					s += math.Abs(float64(hout[i]))
				}
				tol := 4 * f32eps * math.Sqrt(float64(c.K+2)) * s
				if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
					t.Fatalf("%v: out[%d,%d,%d] = %g, cpu %g (|diff| %g > %g)", c, z, m, n, got[i], want[i], d, tol)
				}
			}
		}
	}
}

func mustHost(t *testing.T, b tensor.Backend, v []float32) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromSlice(b, v, len(v))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// mmFlagCombos are the (batch, bias, accumulate) variants a shape is run with.
var mmFlagCombos = []struct {
	batch       int
	bias, accum bool
}{{1, false, false}, {3, true, false}, {1, true, true}, {3, false, true}, {0, true, false}, {3, true, true}, {1, false, true}, {3, false, false}}

// TestMatMulParity covers awkward shapes (1-sized dimensions, sizes that are not multiples of
// the tiles) with all four transposes; each transpose meets all (batch, bias, accumulate)
// combinations across the shapes.
// mmKernels are the product's kernels; every parity test runs each.
var mmKernels = []string{"matmul_tiled", "matmul", "matmul_direct", "matmul_broadcast"}

func TestMatMulParity(t *testing.T) {
	for _, k := range mmKernels {
		t.Run(k, func(t *testing.T) {
			mmForceShader = k
			defer func() { mmForceShader = "" }()
			matMulParity(t)
		})
	}
}

// TestMatMulKernelsAgreeBitwise: the kernels sum every output in the same order from the same
// start, so without split-K they give the same bits.
func TestMatMulKernelsAgreeBitwise(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	r := rand.New(rand.NewPCG(8, 9))
	for _, c := range []mmCase{{M: 37, N: 70, K: 129}, {M: 130, N: 33, K: 64, ta: true, bias: true}, {M: 64, N: 200, K: 17, tb: true, accum: true, batch: 2}} {
		batch := max(c.batch, 1)
		ha, hb, hbias, hout := randVec(r, batch*c.M*c.K), randVec(r, batch*c.K*c.N), randVec(r, c.N), randVec(r, batch*c.M*c.N)
		outs := make([][]float32, len(mmKernels))
		for i, k := range mmKernels {
			mmForceShader = k
			va, vbm, vout := onDevice(t, vb, ha, 0), onDevice(t, vb, hb, 0), onDevice(t, vb, hout, 0)
			var vbias *tensor.Tensor
			if c.bias {
				vbias = onDevice(t, vb, hbias, 0)
			}
			vb.MatMul(vout, va, vbm, vbias, tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.ta, TransB: c.tb, Accumulate: c.accum, Batch: c.batch})
			outs[i] = download(t, vb, vout)
		}
		mmForceShader = ""
		for i := 1; i < len(outs); i++ {
			for j := range outs[0] {
				if math.Float32bits(outs[0][j]) != math.Float32bits(outs[i][j]) {
					t.Fatalf("%v: output %d is %v with %s, %v with %s", c, j, outs[0][j], mmKernels[0], outs[i][j], mmKernels[i])
				}
			}
		}
	}
}

func matMulParity(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	i := 0
	for si, M := range []int{1, 7, 33, 65} {
		for sj, N := range []int{1, 5, 130} {
			for sk, K := range []int{1, 3, 97} {
				s := si*9 + sj*3 + sk
				for tr := range 4 {
					f := mmFlagCombos[(s+3*tr)%len(mmFlagCombos)]
					c := mmCase{M: M, N: N, K: K, batch: f.batch, ta: tr&1 != 0, tb: tr&2 != 0, bias: f.bias, accum: f.accum}
					checkMatMul(t, vb, cb, c, uint64(i))
					i++
				}
			}
		}
	}
	// K = 0: out is the bias, or unchanged plus the bias.
	for _, f := range mmFlagCombos {
		checkMatMul(t, vb, cb, mmCase{M: 3, N: 4, K: 0, batch: f.batch, bias: f.bias, accum: f.accum}, uint64(i))
		i++
	}
}

// TestMatMulTileShapes runs products spanning several tiles with each workgroup shape the
// backend may choose from the device limits.
func TestMatMulTileShapes(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	t.Cleanup(func() { mmForceLocal = [2]uint32{} })
	for _, local := range [][2]uint32{{16, 16}, {16, 8}, {8, 8}} {
		mmForceLocal = local
		for i, sh := range [][3]int{{200, 150, 70}, {130, 260, 17}} {
			for tr := range 4 {
				f := mmFlagCombos[(i+tr)%len(mmFlagCombos)]
				c := mmCase{M: sh[0], N: sh[1], K: sh[2], batch: min(f.batch, 2), ta: tr&1 != 0, tb: tr&2 != 0, bias: f.bias, accum: f.accum}
				checkMatMul(t, vb, cb, c, uint64(100+i*4+tr))
			}
		}
	}
}

// TestMatMulLongK sums over more than mmMaxK terms with each workgroup shape and tile preset: lavapipe would
// cut a single pass short after 65535 loop iterations, returning partial sums.
func TestMatMulLongK(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	t.Cleanup(func() { mmForceLocal = [2]uint32{} })
	for i, local := range [][2]uint32{{16, 16}, {16, 8}, {8, 8}} {
		mmForceLocal = local
		checkMatMul(t, vb, cb, mmCase{M: 3, N: 5, K: 70001, tb: i != 1, bias: true, accum: i == 2}, uint64(400+i))
	}
	t.Cleanup(func() { mmForceTile = mmTile{} })
	for i, p := range mmPresets {
		mmForceTile = p.tile
		checkMatMul(t, vb, cb, mmCase{M: 3, N: 5, K: 70004, tb: i != 1, bias: true, accum: i == 2, aligned: i == 0}, uint64(410+i))
	}
}

// TestMatMulChunked forces windows of 1000 elements, so that products split along M, N and K
// as GPT-2's tied lm head must on lavapipe (wte exceeds maxStorageBufferRange).
func TestMatMulChunked(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	vb.maxChunk = 1000
	cb := cpu.New()
	t.Cleanup(func() { mmForceShader = "" })
	cases := []mmCase{
		{M: 33, N: 300, K: 40, tb: true, bias: true},              // logits = x @ wte^T: chunks of B's rows and out's rows
		{M: 20, N: 40, K: 300},                                    // dx = dlogits @ wte: K split
		{M: 20, N: 40, K: 300, bias: true},                        // K split, bias first
		{M: 300, N: 40, K: 33, ta: true, accum: true},             // dwte += dlogits^T @ x: A's columns
		{M: 300, N: 40, K: 33, ta: true, accum: true, bias: true}, // bias after the last K pass
		{M: 30, N: 30, K: 30, batch: 3, ta: true, tb: true, bias: true},
		{M: 5, N: 6, K: 7, batch: 3, accum: true}, // batches grouped into one dispatch
		{M: 2, N: 1500, K: 3, bias: true},         // a row of out longer than a window
		{M: 3, N: 4, K: 1200, ta: true, tb: true}, // a column of A and a row of B longer than a window
	}
	for _, k := range mmKernels {
		mmForceShader = k
		for i, c := range cases {
			checkMatMul(t, vb, cb, c, uint64(200+i))
			c.aligned = true
			checkMatMul(t, vb, cb, c, uint64(250+i))
		}
	}
	// Split-K applies to whole products whose partial sums fit a window, and to nothing else.
	mmForceShader, mmForceSplits = "matmul_tiled", 3
	defer func() { mmForceSplits = 0 }()
	for i, c := range append(cases, mmCase{M: 7, N: 9, K: 100, bias: true, accum: true}) {
		checkMatMul(t, vb, cb, c, uint64(280+i))
	}
}

// TestMatMulPlan checks that every chunk the planner makes fits the window limit, on random
// shapes and on GPT-2's lm head with lavapipe's 128 MiB windows.
func TestMatMulPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(p tensor.MatMulParams, limit int) (chunks int) {
		mc, nc, kc := mmPlan(p, limit, 64, 64, 1<<30, 1<<30)
		if mc < 1 || nc < 1 || kc < 1 || mc > p.M || nc > p.N || kc > max(p.K, 1) {
			t.Fatalf("%+v limit %d: chunk %d x %d x %d", p, limit, mc, nc, kc)
		}
		if s := mmSpan(p, mc, nc, kc); s.a > limit || s.b > limit || s.out > limit || s.bias > limit {
			t.Fatalf("%+v limit %d: chunk %d x %d x %d spans %+v", p, limit, mc, nc, kc, s)
		}
		return mmCeilDiv(p.M, mc) * mmCeilDiv(p.N, nc) * mmCeilDiv(max(p.K, 1), kc)
	}
	for range 2000 {
		p := tensor.MatMulParams{M: 1 + r.IntN(500), N: 1 + r.IntN(500), K: r.IntN(500), TransA: r.IntN(2) == 0, TransB: r.IntN(2) == 0}
		check(p, 1+r.IntN(3000))
	}
	const window = (128<<20 - 16) / 4
	if n := check(tensor.MatMulParams{M: 4096, N: 50304, K: 768, TransB: true}, window); n > 20 {
		t.Errorf("lm head forward: %d chunks", n)
	}
	if n := check(tensor.MatMulParams{M: 4096, N: 768, K: 50304}, window); n > 32 { // K in passes of mmMaxK
		t.Errorf("lm head dx: %d chunks", n)
	}
	if n := check(tensor.MatMulParams{M: 50304, N: 768, K: 4096, TransA: true, Accumulate: true}, window); n > 20 {
		t.Errorf("lm head dwte: %d chunks", n)
	}
}

// TestMatMulDeterministic checks that a product repeated gives bitwise-equal results.
func TestMatMulDeterministic(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	r := rand.New(rand.NewPCG(5, 5))
	M, N, K := 70, 140, 300
	a, bm := onDevice(t, vb, randVec(r, M*K), 0), onDevice(t, vb, randVec(r, N*K), 0)
	out := onDevice(t, vb, make([]float32, M*N), 0)
	p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
	vb.MatMul(out, a, bm, nil, p)
	first := download(t, vb, out)
	vb.MatMul(out, a, bm, nil, p)
	assertExact(t, "repeated MatMul", download(t, vb, out), first)
}

// TestBiasBackwardParity compares dbias += column sums of dout with the CPU backend within
// 4u·sqrt(N+1)·(sum_i |dout_ij| + |dbias_j|), on the device's limits and on tiny windows.
func TestBiasBackwardParity(t *testing.T) {
	cb := cpu.New()
	for name, vb := range backends(t) {
		for _, sh := range [][2]int{{1, 1}, {7, 5}, {300, 33}, {1000, 70}, {2, 1500}} {
			N, C := sh[0], sh[1]
			r := rand.New(rand.NewPCG(uint64(N), uint64(C)))
			hd, hb := randVec(r, N*C), randVec(r, C)
			vd, vbias := onDevice(t, vb, hd, 3), onDevice(t, vb, hb, 1)
			vb.BiasBackward(vbias, vd, N, C)
			got := download(t, vb, vbias)
			cbias := mustHost(t, cb, hb)
			cb.BiasBackward(cbias, mustHost(t, cb, hd), N, C)
			want, _ := tensor.ToHost(cbias)
			for j := range C {
				s := math.Abs(float64(hb[j]))
				for i := range N {
					s += math.Abs(float64(hd[i*C+j]))
				}
				tol := 4 * f32eps * math.Sqrt(float64(N+1)) * s
				if d := math.Abs(float64(got[j]) - float64(want[j])); !(d <= tol) {
					t.Fatalf("%s N=%d C=%d: dbias[%d] = %g, cpu %g (|diff| %g > %g)", name, N, C, j, got[j], want[j], d, tol)
				}
			}
		}
	}
}

// TestAdamWParity compares one AdamW step with the CPU backend, with and without clipping,
// within 1e-6 relative to each value's magnitude (the GPU's division and square root may
// differ from the host's by an ulp or two); clipping scales the gradient by about 0.3, which
// no such bound could hide. The tiny windows split the update into chunks.
func TestAdamWParity(t *testing.T) {
	cb := cpu.New()
	for name, vb := range backends(t) {
		for _, n := range []int{1, 1000, 4099} {
			for _, clip := range []string{"none", "active", "inactive"} {
				r := rand.New(rand.NewPCG(uint64(n), uint64(len(clip))))
				hp, hg, hm := randVec(r, n), randVec(r, n), randVec(r, n)
				hv := make([]float32, n)
				for i := range hv {
					hv[i] = float32(r.Float64())
				}
				p := tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 7}
				var sumsq float32
				switch clip {
				case "active":
					for _, g := range hg {
						sumsq += g * g
					}
					p.MaxNorm = 0.3 * float32(math.Sqrt(float64(sumsq)))
				case "inactive":
					sumsq, p.MaxNorm = 4, 10
				}
				vp, vg, vm, vv := onDevice(t, vb, hp, 1), onDevice(t, vb, hg, 2), onDevice(t, vb, hm, 3), onDevice(t, vb, hv, 4)
				cp, cg, cm, cv := mustHost(t, cb, hp), mustHost(t, cb, hg), mustHost(t, cb, hm), mustHost(t, cb, hv)
				pv, pc := p, p
				if clip != "none" {
					pv.GradSumSq, pc.GradSumSq = onDevice(t, vb, []float32{sumsq}, 5), mustHost(t, cb, []float32{sumsq})
				}
				vb.AdamW(vp, vg, vm, vv, pv)
				cb.AdamW(cp, cg, cm, cv, pc)
				for _, x := range []struct {
					what  string
					v, c  *tensor.Tensor
					old   []float32
					scale float64
				}{{"params", vp, cp, hp, float64(p.LR)}, {"m", vm, cm, hm, 0}, {"v", vv, cv, hv, 0}} {
					got := download(t, vb, x.v)
					want, _ := tensor.ToHost(x.c)
					for i := range n {
						g := float64(hg[i])
						tol := 1e-6 * (math.Abs(float64(want[i])) + math.Abs(float64(x.old[i])) + x.scale + math.Abs(g) + g*g)
						if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
							t.Fatalf("%s n=%d clip=%s: %s[%d] = %g, cpu %g (|diff| %g > %g)", name, n, clip, x.what, i, got[i], want[i], d, tol)
						}
					}
				}
			}
		}
	}
}

// TestKernelProfile checks the per-kernel table built from timestamp queries.
func TestKernelProfile(t *testing.T) {
	d := device(t)
	if d.Info.TimestampBits == 0 {
		t.Skip("no timestamps on this device's compute queue")
	}
	vb := NewBackendOn(d)
	defer vb.Close()
	vb.SetProfiling(true)
	defer vb.SetProfiling(false)
	r := rand.New(rand.NewPCG(9, 9))
	const M, N, K = 64, 64, 64
	a, bm := onDevice(t, vb, randVec(r, M*K), 0), onDevice(t, vb, randVec(r, K*N), 0)
	out := onDevice(t, vb, make([]float32, M*N), 0)
	for range 3 {
		vb.MatMul(out, a, bm, nil, tensor.MatMulParams{M: M, N: N, K: K})
	}
	vb.Scale(out, 0.5)
	prof := vb.KernelProfile()
	if err := vb.Sync(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	var share float64
	for i, e := range prof {
		calls[e["kernel"].(string)] = e["calls"].(int)
		share += e["share"].(float64)
		if e["total_ms"].(float64) < 0 || e["mean_us"].(float64) < 0 {
			t.Errorf("negative time in %v", e)
		}
		if i > 0 && e["total_ms"].(float64) > prof[i-1]["total_ms"].(float64) {
			t.Errorf("profile not sorted by time: %v", prof)
		}
	}
	// Uploads are copies, not dispatches: the kernels are exactly what ran above (the tiled
	// kernel in its vec4 variant, the operands being aligned).
	mm := vb.mmShader()
	if mm == "matmul_tiled" {
		mm = "matmul_tiled_vec4"
	}
	if calls[mm] != 3 || calls["scale"] != 1 || len(calls) != 2 {
		t.Errorf("calls = %v, want %s 3 and scale 1", calls, mm)
	}
	if math.Abs(share-1) > 0.01 {
		t.Errorf("shares add up to %g", share)
	}
}

// TestMatMulBeyondMaxStorageBufferRange multiplies by an embedding (V x C) larger than one
// storage-buffer window of the device itself, as GPT-2's tied lm head does: logits = x @ wte^T.
// The chunking of the other two lm-head products is checked on tiny windows (TestMatMulChunked).
func TestMatMulBeyondMaxStorageBufferRange(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates more than maxStorageBufferRange")
	}
	d := device(t)
	const C = 64
	V := int(d.Info.MaxStorageBufferRange/4/C) + 64
	if uint64(V)*C*4*2 > d.Info.DeviceLocalBytes()/2 {
		t.Skipf("a %d x %d embedding does not fit comfortably in %s", V, C, formatBytes(d.Info.DeviceLocalBytes()))
	}
	vb := NewBackendOn(d)
	defer vb.Close()
	checkMatMul(t, vb, cpu.New(), mmCase{M: 2, N: V, K: C, tb: true, bias: true}, 300)
}

// mmTiledCases are odd and aligned shapes, every transpose, batches, bias and accumulation,
// for the tiled kernel's tile and split-K tests.
func mmTiledCases() []mmCase {
	var cases []mmCase
	shapes := [][3]int{{1, 1, 1}, {7, 5, 3}, {33, 130, 97}, {130, 70, 200}, {64, 128, 256}, {200, 36, 44}}
	for i, sh := range shapes {
		for tr := range 4 {
			f := mmFlagCombos[(i+tr)%len(mmFlagCombos)]
			c := mmCase{M: sh[0], N: sh[1], K: sh[2], batch: min(f.batch, 2), ta: tr&1 != 0, tb: tr&2 != 0, bias: f.bias, accum: f.accum}
			cases = append(cases, c)
			c.aligned = true
			cases = append(cases, c)
		}
	}
	return cases
}

// mmRunKernels runs f with profiling on and returns how often each kernel ran.
func mmRunKernels(t *testing.T, vb *Backend, f func()) map[string]int {
	t.Helper()
	vb.SetProfiling(true)
	defer vb.SetProfiling(false)
	f()
	calls := map[string]int{}
	for _, e := range vb.KernelProfile() {
		if n, ok := e["calls"].(int); ok {
			calls[e["kernel"].(string)] = n
		}
	}
	if err := vb.Sync(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestMatMulTilePresets forces each preset through VKGRAD_MATMUL_TILE and checks every case
// against the CPU backend; aligned cases must take the vec4 kernel (where the device has
// timestamps to tell), the others the scalar one.
func TestMatMulTilePresets(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	tiles := []string{"8x8x4/2x2", "12x20x12/3x5"} // beyond the presets: tiny and odd-shaped
	for _, p := range mmPresets {
		tiles = append(tiles, p.tile.String())
	}
	for i, tile := range tiles {
		t.Run(tile, func(t *testing.T) {
			t.Setenv(mmTileEnv, tile)
			for j, c := range mmTiledCases() {
				calls := mmRunKernels(t, vb, func() { checkMatMul(t, vb, cb, c, uint64(500+100*i+j)) })
				want := "matmul_tiled"
				if mmVec4Case(c) {
					want = "matmul_tiled_vec4"
				}
				if vb.dev.Info.TimestampBits > 0 && (calls[want] != 1 || len(calls) != 1) {
					t.Fatalf("%v: kernels %v, want %s once", c, calls, want)
				}
			}
		})
	}
}

// mmVec4Case: aligned operands whose stored rows, and the extents read along them, are
// multiples of 4 (for an unchunked product, row length and extent are the same).
func mmVec4Case(c mmCase) bool {
	lda, ldb := c.K, c.N
	if c.ta {
		lda = c.M
	}
	if c.tb {
		ldb = c.K
	}
	return c.aligned && c.K > 0 && lda%4 == 0 && ldb%4 == 0
}

// TestMatMulTileOverrideErrors: a bad VKGRAD_MATMUL_TILE is an error naming the variable.
func TestMatMulTileOverrideErrors(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	r := rand.New(rand.NewPCG(1, 1))
	a, bm, out := onDevice(t, vb, randVec(r, 64), 0), onDevice(t, vb, randVec(r, 64), 0), onDevice(t, vb, make([]float32, 64), 0)
	for _, bad := range []string{"128x128", "128x128x16/8", "0x64x16/4x4", "64x64x16/3x4", "66x64x16/6x4", "64x64x6/4x4", "1024x1024x16/1x1", "64x64x16/16x32", "axbxc/dxe"} {
		t.Setenv(mmTileEnv, bad)
		vb.MatMul(out, a, bm, nil, tensor.MatMulParams{M: 8, N: 8, K: 8})
		err := vb.Sync()
		if err == nil || !strings.Contains(err.Error(), mmTileEnv) {
			t.Errorf("%s=%q: error %v, want one naming %s", mmTileEnv, bad, err, mmTileEnv)
		}
	}
}

// TestMatMulSplitK forces split-K on every case with each preset and checks it against the CPU
// backend, that the split ran (a reduction pass), and that two runs give the same bits.
func TestMatMulSplitK(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	cb := cpu.New()
	t.Cleanup(func() { mmForceSplits, mmForceTile = 0, mmTile{} })
	for i, p := range mmPresets {
		mmForceTile = p.tile
		for _, splits := range []int{1, 3} {
			mmForceSplits = splits
			for j, c := range mmTiledCases() {
				calls := mmRunKernels(t, vb, func() { checkMatMul(t, vb, cb, c, uint64(900+100*i+j)) })
				planned, _ := vb.mmSplits(p.tile, c.M, c.N, c.K, max(c.batch, 1))
				if vb.dev.Info.TimestampBits > 0 && (calls["matmul_splitk_reduce"] == 1) != (planned > 1) {
					t.Fatalf("%s %v splits %d (planned %d): kernels %v", p.name, c, splits, planned, calls)
				}
			}
		}
		mmForceSplits = 4
		c := mmCase{M: 70, N: 36, K: 1000, tb: true, bias: true, accum: true, batch: 2}
		runs := [2][]float32{mmRunOnce(t, vb, c, 7), mmRunOnce(t, vb, c, 7)}
		assertExact(t, p.name+" split-K rerun", runs[1], runs[0])
	}
}

// mmRunOnce multiplies the inputs of seed on vb and returns out.
func mmRunOnce(t *testing.T, vb *Backend, c mmCase, seed uint64) []float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	batch := max(c.batch, 1)
	a, bm := onDevice(t, vb, randVec(r, batch*c.M*c.K), 0), onDevice(t, vb, randVec(r, batch*c.K*c.N), 0)
	bias, out := onDevice(t, vb, randVec(r, c.N), 0), onDevice(t, vb, randVec(r, batch*c.M*c.N), 0)
	if !c.bias {
		bias = nil
	}
	vb.MatMul(out, a, bm, bias, tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.ta, TransB: c.tb, Accumulate: c.accum, Batch: c.batch})
	return download(t, vb, out)
}

// TestMatMulTileChoice checks the presets and split-K plans for GPT-2 124M's products at
// B=8, T=1024 on a 60-CU device, and the override's parsing.
func TestMatMulTileChoice(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	t.Setenv(mmTileEnv, "") // the presets, whatever the environment says
	vb.dev.Info.ComputeUnits = 60
	defer func() { vb.dev.Info.ComputeUnits = 0 }()
	for _, c := range []struct {
		M, N, K, batch int
		tile           string
		splits         int
	}{
		{8192, 2304, 768, 1, "large", 1}, // qkv forward: 1152 tiles
		{768, 2304, 8192, 1, "large", 2}, // its weight gradient: 108 tiles, fewer than 2 per CU
		{768, 768, 8192, 1, "medium", 1}, // attention projection gradient: 144 medium tiles
		{1, 768, 768, 1, "small", 1},     // one token: K too short to split
		{1, 768, 8192, 1, "small", 5},    // 24 small tiles: ceil(120/24) = 5 splits
		{96, 96, 4096, 1, "small", 8},    // 9 small tiles: at most 8 splits of at least 512
		{64, 64, 300, 1, "small", 1},     // too short to split
	} {
		tile, err := vb.mmTileFor(c.M, c.N, c.batch)
		if err != nil {
			t.Fatal(err)
		}
		var want mmTile
		for _, p := range mmPresets {
			if p.name == c.tile {
				want = p.tile
			}
		}
		splits, ksplit := vb.mmSplits(tile, c.M, c.N, c.K, c.batch)
		if tile != want || splits != c.splits || splits*ksplit < c.K || (splits-1)*ksplit >= c.K || splits > 1 && ksplit%tile.BK != 0 {
			t.Errorf("%+v: tile %v, %d splits of %d; want %s (%v) and %d splits", c, tile, splits, ksplit, c.tile, want, c.splits)
		}
	}
	if tile, err := parseMMTile("256x128x32/16x8"); err != nil || tile != (mmTile{256, 128, 32, 16, 8}) {
		t.Errorf("parseMMTile: %v, %v", tile, err)
	}
}
