package vk

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// mmCase is a product of the Vulkan tests: backendtest.MatMulCase in short field names.
type mmCase struct {
	M, N, K, batch      int
	ta, tb, bias, accum bool
	aligned             bool // operands start at multiples of 4 elements (the vec4 loads)
}

func (c mmCase) String() string { return c.public().String() }

// public returns the case as backendtest describes it.
func (c mmCase) public() backendtest.MatMulCase {
	return backendtest.MatMulCase{M: c.M, N: c.N, K: c.K, Batch: c.batch, TransA: c.ta, TransB: c.tb, Bias: c.bias, Accumulate: c.accum, Aligned: c.aligned}
}

// checkMatMul runs c on vb and on the CPU backend with the random inputs of seed and compares
// every output within backendtest.CheckMatMul's bound (a few roundings of the terms' sum).
func checkMatMul(t *testing.T, vb *Backend, cb tensor.Backend, c mmCase, seed uint64) {
	t.Helper()
	backendtest.CheckMatMul(t, vb, cb, c.public(), seed)
}

// mustHost uploads v into a new tensor on b.
func mustHost(t *testing.T, b tensor.Backend, v []float32) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromSlice(b, v, len(v))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// mmFlagCombos are the (batch, bias, accumulate) variants a shape is run with.
var mmFlagCombos = backendtest.MatMulFlagCombos

// mmKernels are the product's kernels; every parity test runs each.
var mmKernels = []string{"matmul_tiled", "matmul", "matmul_direct", "matmul_broadcast"}

// TestMatMulParity runs backendtest's products (awkward shapes with every transpose, batch,
// bias and accumulation) on each kernel against the CPU backend.
func TestMatMulParity(t *testing.T) {
	for _, k := range mmKernels {
		t.Run(k, func(t *testing.T) {
			mmForceShader = k
			defer func() { mmForceShader = "" }()
			backendtest.RunMatMul(t, newVulkan(device(t)), backendtest.Options{})
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
			va, vbm, vout := backendtest.OnBackend(t, vb, ha, 0), backendtest.OnBackend(t, vb, hb, 0), backendtest.OnBackend(t, vb, hout, 0)
			var vbias *tensor.Tensor
			if c.bias {
				vbias = backendtest.OnBackend(t, vb, hbias, 0)
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
				c := mmCase{M: sh[0], N: sh[1], K: sh[2], batch: min(f.Batch, 2), ta: tr&1 != 0, tb: tr&2 != 0, bias: f.Bias, accum: f.Accumulate}
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
	a, bm := backendtest.OnBackend(t, vb, randVec(r, M*K), 0), backendtest.OnBackend(t, vb, randVec(r, N*K), 0)
	out := backendtest.OnBackend(t, vb, make([]float32, M*N), 0)
	p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
	vb.MatMul(out, a, bm, nil, p)
	first := download(t, vb, out)
	vb.MatMul(out, a, bm, nil, p)
	assertExact(t, "repeated MatMul", download(t, vb, out), first)
}

// TestBiasBackwardParity runs backendtest's column sums against the CPU backend, on the
// device's limits and on tiny windows.
func TestBiasBackwardParity(t *testing.T) {
	d := device(t)
	backendtest.RunBiasBackward(t, newVulkan(d), backendtest.Options{Variants: []backendtest.Variant{tinyLimits(d)}})
}

// TestAdamWParity runs backendtest's AdamW steps (without clipping, clipping and not) against
// the CPU backend, on the device's limits and on tiny windows that split the update.
func TestAdamWParity(t *testing.T) {
	d := device(t)
	backendtest.RunAdamW(t, newVulkan(d), backendtest.Options{Variants: []backendtest.Variant{tinyLimits(d)}})
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
	a, bm := backendtest.OnBackend(t, vb, randVec(r, M*K), 0), backendtest.OnBackend(t, vb, randVec(r, K*N), 0)
	out := backendtest.OnBackend(t, vb, make([]float32, M*N), 0)
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
	skipUnlessAllocationExceedsRange(t, d.Info, uint64(V)*C*4)
	if uint64(V)*C*4*2 > d.Info.DeviceLocalBytes()/2 {
		t.Skipf("a %d x %d embedding does not fit comfortably in %s", V, C, sysinfo.FormatBytes(d.Info.DeviceLocalBytes()))
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
			c := mmCase{M: sh[0], N: sh[1], K: sh[2], batch: min(f.Batch, 2), ta: tr&1 != 0, tb: tr&2 != 0, bias: f.Bias, accum: f.Accumulate}
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
	a, bm, out := backendtest.OnBackend(t, vb, randVec(r, 64), 0), backendtest.OnBackend(t, vb, randVec(r, 64), 0), backendtest.OnBackend(t, vb, make([]float32, 64), 0)
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
	a, bm := backendtest.OnBackend(t, vb, randVec(r, batch*c.M*c.K), 0), backendtest.OnBackend(t, vb, randVec(r, batch*c.K*c.N), 0)
	bias, out := backendtest.OnBackend(t, vb, randVec(r, c.N), 0), backendtest.OnBackend(t, vb, randVec(r, batch*c.M*c.N), 0)
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
		{8192, 2304, 768, 1, "large", 1}, // qkv forward: 2304 tiles
		{768, 2304, 8192, 1, "large", 1}, // its weight gradient: 216 tiles, 2 per CU and more
		{768, 768, 8192, 1, "large", 2},  // attention projection gradient: 72 tiles, fewer than 2 per CU
		{512, 768, 8192, 1, "medium", 2}, // 48 large tiles leave CUs idle; 96 medium ones
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
