package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/internal/race"
	"github.com/vkgrad/vkgrad/tensor"
)

type shape struct{ m, n, k int }

// testShapes cover single elements, sizes that are not multiples of any tile, K longer than
// one kc block (and than two), and products big enough to be split across threads.
var testShapes = []shape{
	{1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {7, 33, 1}, {8, 48, 256}, {9, 49, 257},
	{33, 65, 17}, {257, 33, 7}, {17, 257, 300}, {64, 96, 520}, {3, 100, 513},
	{100, 3, 40}, {130, 200, 70}, {256, 480, 64}, {37, 70, 1100},
	// Few rows: with B transposed these take the dot-product path where there is one.
	{1, 100, 50}, {3, 37, 33}, {4, 64, 768}, {2, 9, 16}, {1, 5, 15}, {4, 3, 300}, {13, 21, 100}, {16, 50, 64},
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.Float64()*2 - 1)
	}
	return s
}

// operands builds A, B and C for a shape with leading dimensions padded past the row length.
type operands struct {
	transA, transB bool
	m, n, k        int
	a, b, c        []float32
	lda, ldb, ldc  int
}

func newOperands(r *rand.Rand, s shape, transA, transB bool) *operands {
	o := &operands{transA: transA, transB: transB, m: s.m, n: s.n, k: s.k}
	ar, ac := s.m, s.k
	if transA {
		ar, ac = s.k, s.m
	}
	br, bc := s.k, s.n
	if transB {
		br, bc = s.n, s.k
	}
	o.lda, o.ldb, o.ldc = ac+3, bc+5, s.n+2
	o.a = randSlice(r, (ar-1)*o.lda+ac)
	o.b = randSlice(r, (br-1)*o.ldb+bc)
	o.c = randSlice(r, s.m*o.ldc)
	return o
}

func (o *operands) at(i, p int) float64 {
	if o.transA {
		return float64(o.a[p*o.lda+i])
	}
	return float64(o.a[i*o.lda+p])
}

func (o *operands) bt(p, j int) float64 {
	if o.transB {
		return float64(o.b[j*o.ldb+p])
	}
	return float64(o.b[p*o.ldb+j])
}

// reference returns alpha*op(A)op(B) + beta*C in float64 and, per element, the sum of the
// magnitudes of its terms, which bounds float32 rounding error.
func (o *operands) reference(alpha, beta float32) (want, mag []float64) {
	want = make([]float64, o.m*o.n)
	mag = make([]float64, o.m*o.n)
	for i := 0; i < o.m; i++ {
		for j := 0; j < o.n; j++ {
			var s, sa float64
			for p := 0; p < o.k; p++ {
				t := o.at(i, p) * o.bt(p, j)
				s += t
				sa += math.Abs(t)
			}
			w := float64(alpha) * s
			ma := math.Abs(float64(alpha)) * sa
			if beta != 0 {
				cv := float64(beta) * float64(o.c[i*o.ldc+j])
				w += cv
				ma += math.Abs(cv)
			}
			want[i*o.n+j], mag[i*o.n+j] = w, ma
		}
	}
	return want, mag
}

func (o *operands) run(alpha, beta float32) []float32 {
	c := append([]float32(nil), o.c...)
	Sgemm(o.transA, o.transB, o.m, o.n, o.k, alpha, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	return c
}

func useKernel(t testing.TB, k *microKernel) {
	old := active
	active = k
	t.Cleanup(func() { active = old })
}

func useThreads(t testing.TB, n int) {
	old := int(threads.Load())
	SetThreads(n)
	t.Cleanup(func() { SetThreads(old) })
}

// TestWholeAMatchesBlocked checks that taking each panel through all of K, with op(A)
// packed whole, gives the bits of going kc block by kc block, for every kernel, with beta,
// a bias, rounded operands and bfloat16 B, on 1 and 2 threads.
func TestWholeAMatchesBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	saved := wholeC
	t.Cleanup(func() { wholeC = saved })
	for _, kern := range kernels {
		useKernel(t, kern)
		for _, s := range []shape{{37, 70, 1100}, {64, 200, 900}} {
			for tr := 0; tr < 4; tr++ {
				o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
				bias := randSlice(r, s.n)
				for _, th := range []int{1, 2} {
					var got [2][4][]float32
					bh := make([]uint16, len(o.b))
					BF16Bits(bh, o.b)
					for w, c := range []int{math.MaxInt, 0} {
						wholeC = c
						got[w] = fourProducts(th, s, o, bias, bh)
					}
					for v := range got[0] {
						for i := range got[0][v] {
							if math.Float32bits(got[0][v][i]) != math.Float32bits(got[1][v][i]) {
								t.Fatalf("%s %+v transA=%v transB=%v threads=%d call %d: c[%d] = %v by kc blocks, %v by whole panels",
									kern.name, s, o.transA, o.transB, th, v, i, got[0][v][i], got[1][v][i])
							}
						}
					}
				}
			}
		}
	}
}

func TestSgemmMatchesReference(t *testing.T) {
	scales := []struct{ alpha, beta float32 }{{1, 0}, {1, 1}, {-0.5, 2}, {1.5, -1}}
	for _, kern := range kernels {
		t.Run(kern.name, func(t *testing.T) {
			useKernel(t, kern)
			r := rand.New(rand.NewPCG(1, 2))
			for _, s := range testShapes {
				for tr := 0; tr < 4; tr++ {
					o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
					for _, sc := range scales {
						got := o.run(sc.alpha, sc.beta)
						want, mag := o.reference(sc.alpha, sc.beta)
						// Any summation order is within (k+2)*eps of the magnitude sum.
						tol := float64(o.k+4) * 0x1p-24
						for i := 0; i < o.m; i++ {
							for j := 0; j < o.ldc; j++ {
								g := got[i*o.ldc+j]
								if j >= o.n {
									if g != o.c[i*o.ldc+j] {
										t.Fatalf("%+v transA=%v transB=%v: padding C[%d,%d] changed", s, o.transA, o.transB, i, j)
									}
									continue
								}
								w, m := want[i*o.n+j], mag[i*o.n+j]
								if d := math.Abs(float64(g) - w); d > tol*m+1e-30 {
									t.Fatalf("%+v transA=%v transB=%v alpha=%v beta=%v: C[%d,%d]=%v want %v (err %.3g > %.3g)",
										s, o.transA, o.transB, sc.alpha, sc.beta, i, j, g, w, d, tol*m)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestKernelsAgree compares every kernel with the portable one on a GPT-2-like shape.
func TestKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := shape{96, 200, 768}
	for tr := 0; tr < 4; tr++ {
		o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
		old := active
		active = goKernel
		ref := o.run(1, 0.5)
		active = old
		for _, kern := range kernels {
			active = kern
			got := o.run(1, 0.5)
			active = old
			tol := 1e-5 * math.Sqrt(float64(s.k))
			for i := range got {
				d := math.Abs(float64(got[i] - ref[i]))
				if d > tol*math.Max(1, math.Abs(float64(ref[i]))) {
					t.Fatalf("%s vs go, transA=%v transB=%v: element %d: %v vs %v", kern.name, o.transA, o.transB, i, got[i], ref[i])
				}
			}
		}
	}
}

// TestKernelsWithinRoundingOfPortable states the parity the vector kernels keep with the
// portable one: both sum each element over k in the same order, and differ only in rounding
// each multiply-add once (FMA) or twice (the Go compiler fuses some on some architectures),
// so each is within (k+4)·2⁻²⁴ of the exact result relative to the sum of its terms'
// magnitudes, and the two within twice that of each other.
func TestKernelsWithinRoundingOfPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range []shape{{48, 100, 768}, {9, 49, 257}} {
		for tr := 0; tr < 4; tr++ {
			o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
			_, mag := o.reference(1, 0.5)
			old := active
			active = goKernel
			ref := o.run(1, 0.5)
			active = old
			tol := 2 * float64(s.k+4) * 0x1p-24
			for _, kern := range kernels {
				active = kern
				got := o.run(1, 0.5)
				active = old
				for i := 0; i < s.m; i++ {
					for j := 0; j < s.n; j++ {
						g, w := got[i*o.ldc+j], ref[i*o.ldc+j]
						if d := math.Abs(float64(g) - float64(w)); d > tol*mag[i*s.n+j] {
							t.Fatalf("%s vs go %+v transA=%v transB=%v: C[%d,%d] = %v vs %v (%.3g apart, bound %.3g)",
								kern.name, s, o.transA, o.transB, i, j, g, w, d, tol*mag[i*s.n+j])
						}
					}
				}
			}
		}
	}
}

// TestVectorKernelsFuseMultiplyAdd checks each vector kernel rounds a multiply-add once:
// after acc = -(1+2⁻¹¹), adding (1+2⁻¹²)² = 1+2⁻¹¹+2⁻²⁴ leaves 2⁻²⁴ when fused and 0 when
// the product is rounded first.
func TestVectorKernelsFuseMultiplyAdd(t *testing.T) {
	x := float32(1 + 0x1p-12)
	a := []float32{1, x}
	b := []float32{-(1 + 0x1p-11), x}
	for _, kern := range kernels {
		if kern == goKernel {
			continue // whether Go fuses depends on the architecture and GOAMD64
		}
		useKernel(t, kern)
		c := []float32{7}
		Sgemm(false, false, 1, 1, 2, 1, a, 2, b, 1, 0, c, 1)
		if c[0] != 0x1p-24 {
			t.Errorf("%s: got %g, want 2^-24 from a fused multiply-add", kern.name, c[0])
		}
	}
}

// TestDeterministic checks that results are the same bits across runs and thread counts.
func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kern := range kernels {
		useKernel(t, kern)
		for _, s := range []shape{{256, 480, 300}, {131, 517, 600}, {5, 4099, 300}} {
			o := newOperands(r, s, false, true)
			useThreads(t, 1)
			ref := o.run(1, 1)
			for _, n := range []int{2, 3, 2, 5} {
				SetThreads(n)
				got := o.run(1, 1)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("%s %+v: %d threads differ from 1 at %d: %v vs %v", kern.name, s, n, i, got[i], ref[i])
					}
				}
			}
		}
	}
}

func TestBetaZeroOverwritesNaN(t *testing.T) {
	for _, kern := range kernels {
		useKernel(t, kern)
		r := rand.New(rand.NewPCG(7, 8))
		o := newOperands(r, shape{19, 53, 31}, false, false)
		for i := range o.c {
			o.c[i] = float32(math.NaN())
		}
		got := o.run(2, 0)
		want, _ := o.reference(2, 0)
		for i := 0; i < o.m; i++ {
			for j := 0; j < o.n; j++ {
				if g := got[i*o.ldc+j]; math.IsNaN(float64(g)) || math.Abs(float64(g)-want[i*o.n+j]) > 1e-4 {
					t.Fatalf("%s: C[%d,%d]=%v want %v", kern.name, i, j, g, want[i*o.n+j])
				}
			}
		}
	}
}

func TestAlphaZeroAndEmptyK(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	a := []float32{float32(math.NaN()), 1}
	Sgemm(false, false, 2, 2, 1, 0, a, 1, []float32{5, 6}, 2, 3, c, 2)
	if c[0] != 3 || c[3] != 12 {
		t.Fatalf("alpha=0: C=%v want beta*C", c)
	}
	Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
	for _, v := range c {
		if v != 0 {
			t.Fatalf("k=0, beta=0: C=%v want zeros", c)
		}
	}
}

func TestValidate(t *testing.T) {
	buf := make([]float32, 100)
	cases := []struct {
		name                   string
		transA, transB         bool
		m, n, k, lda, ldb, ldc int
		a, b, c                []float32
		want                   string
	}{
		{"negative", false, false, -1, 2, 2, 2, 2, 2, buf, buf, buf, "negative size"},
		{"lda", false, false, 2, 2, 3, 2, 2, 2, buf, buf, buf, "lda=2"},
		{"ldaT", true, false, 4, 2, 3, 3, 2, 2, buf, buf, buf, "lda=3"},
		{"ldbT", false, true, 2, 5, 3, 3, 2, 5, buf, buf, buf, "ldb=2"},
		{"shortA", false, false, 4, 2, 3, 3, 2, 2, buf[:10], buf, buf, "a has 10 elements"},
		{"shortB", false, true, 4, 2, 3, 3, 3, 2, buf, buf[:5], buf, "b has 5 elements"},
		{"shortC", false, false, 4, 2, 3, 3, 2, 3, buf, buf, buf[:10], "c has 10 elements"},
		{"overflow", false, false, math.MaxInt / 2, 2, 3, math.MaxInt / 2, 2, 2, buf, buf, buf, "overflows int"},
	}
	for _, tc := range cases {
		err := Validate(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.a, tc.lda, tc.b, tc.ldb, tc.c, tc.ldc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := Validate(true, true, 3, 4, 5, buf[:(5-1)*3+3], 3, buf[:(4-1)*6+5], 6, buf[:(3-1)*4+4], 4); err != nil {
		t.Errorf("valid call rejected: %v", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "c has") {
			t.Errorf("Sgemm with a short C: recovered %v, want a panic naming c", r)
		}
	}()
	Sgemm(false, false, 4, 2, 3, 1, buf, 3, buf, 2, 0, buf[:3], 2)
}

func TestNoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	useThreads(t, 2)
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		s              shape
		transA, transB bool
	}{
		{shape{64, 200, 130}, false, true},
		{shape{100, 300, 300}, true, false},
		{shape{3, 2000, 300}, true, true}, // the dot path, gathering A's rows
	} {
		o := newOperands(r, c.s, c.transA, c.transB)
		cm := append([]float32(nil), o.c...)
		f := func() { Sgemm(o.transA, o.transB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0, cm, o.ldc) }
		// Warm up: the first calls start the helpers and fill the free lists (a helper that
		// starts late returns its token a little after the call that cancelled it).
		for range 20 {
			f()
		}
		if n := testing.AllocsPerRun(20, f); n > 0 {
			t.Errorf("%+v transA=%v transB=%v: Sgemm allocated %v times per call", c.s, c.transA, c.transB, n)
		}
	}
}

// TestPlanCoversC checks the task grid tiles C exactly, with tile-aligned boundaries and rows
// per task within the L2 budget, for a range of shapes and thread counts.
func TestPlanCoversC(t *testing.T) {
	for _, kern := range kernels {
		for _, s := range []shape{{1, 1, 1}, {256, 50304, 768}, {50304, 768, 256}, {7, 3000, 5}, {3000, 7, 5}, {256, 768, 50304}, {1000, 1000, 1000}} {
			for _, nt := range []int{1, 2, 3, 8} {
				j := &job{m: s.m, n: s.n, k: s.k, kern: kern}
				j.plan(nt)
				if j.mc%kern.mr != 0 || j.nc%kern.nr != 0 || j.mc > maxMC || j.mc <= 0 || j.nc <= 0 {
					t.Fatalf("%s %+v threads=%d: mc=%d nc=%d not tile multiples within bounds", kern.name, s, nt, j.mc, j.nc)
				}
				tm := (s.m + j.mc - 1) / j.mc
				if tn := (s.n + j.nc - 1) / j.nc; tn != j.tn || tm*tn != j.ntasks {
					t.Fatalf("%s %+v threads=%d: grid %dx%d but tn=%d ntasks=%d", kern.name, s, nt, tm, tn, j.tn, j.ntasks)
				}
				if j.workers < 1 || j.workers > nt || j.workers > j.ntasks {
					t.Fatalf("%s %+v threads=%d: %d workers for %d tasks", kern.name, s, nt, j.workers, j.ntasks)
				}
			}
		}
	}
}

// TestConcurrentCalls runs products from several goroutines at once, so helpers arrive late,
// get cancelled and recycle their tokens while other calls reuse them; every result must
// match the same product computed alone.
func TestConcurrentCalls(t *testing.T) {
	useThreads(t, 3)
	r := rand.New(rand.NewPCG(11, 12))
	ops := []*operands{
		newOperands(r, shape{64, 200, 300}, false, true),
		newOperands(r, shape{40, 500, 100}, true, false),
		newOperands(r, shape{5, 2000, 200}, false, true),
	}
	want := make([][]float32, len(ops))
	for i, o := range ops {
		want[i] = o.run(1, 0.5)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := 0; it < 30; it++ {
				i := (g + it) % len(ops)
				got := ops[i].run(1, 0.5)
				for x := range got {
					if math.Float32bits(got[x]) != math.Float32bits(want[i][x]) {
						errs <- fmt.Sprintf("goroutine %d, product %d: element %d is %v, want %v", g, i, x, got[x], want[i][x])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestPeakGFLOPS(t *testing.T) {
	p1 := PeakGFLOPS(1)
	if !(p1 > 0.1 && p1 < 1e5) {
		t.Fatalf("PeakGFLOPS(1) = %v, want a plausible positive rate", p1)
	}
	for _, kern := range kernels {
		// Every kernel's loop reports the operations it ran: 2 per multiply-add lane.
		if f := kern.peak(1); f <= 0 || f != float64(int(f)) || int(f)%2 != 0 {
			t.Errorf("%s: peak loop reports %v flops per iteration", kern.name, f)
		}
	}
}

func TestKernelName(t *testing.T) {
	if got, want := KernelName(), kernels[0].name; got != want {
		t.Fatalf("KernelName() = %q, want the best kernel this CPU runs, %q", got, want)
	}
	useKernel(t, goKernel)
	if got := KernelName(); got != "go" {
		t.Fatalf("KernelName() with the portable kernel = %q", got)
	}
}

// TestBiasMatchesPresetC checks SgemmBiasThreads against its definition, bit for bit: every
// row of C set to the bias, then SgemmThreads with beta = 1. Shapes cover edge tiles, several
// K blocks, the dot-product path and work split over threads; the padding between C's rows
// must be left alone.
func TestBiasMatchesPresetC(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	shapes := append(append([]shape{}, testShapes...), shape{256, 768, 768})
	for _, s := range shapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			o := newOperands(r, s, tr[0], tr[1])
			bias := randSlice(r, s.n)
			want := append([]float32(nil), o.c...)
			for i := 0; i < s.m; i++ {
				copy(want[i*o.ldc:i*o.ldc+s.n], bias)
			}
			SgemmThreads(0, o.transA, o.transB, s.m, s.n, s.k, 0.5, o.a, o.lda, o.b, o.ldb, 1, want, o.ldc)
			for _, threads := range []int{1, 3} {
				got := append([]float32(nil), o.c...)
				SgemmBiasThreads(threads, o.transA, o.transB, s.m, s.n, s.k, 0.5, o.a, o.lda, o.b, o.ldb, bias, got, o.ldc)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v transA=%v transB=%v threads=%d: c[%d] = %v, want %v", s, tr[0], tr[1], threads, i, got[i], want[i])
					}
				}
			}
		}
	}
	// An empty sum is the bias alone.
	c := []float32{9, 9, 9, 9, 9, 9}
	SgemmBiasThreads(1, false, false, 2, 3, 0, 1, nil, 1, nil, 3, []float32{1, 2, 3}, c, 3)
	if fmt.Sprint(c) != "[1 2 3 1 2 3]" {
		t.Fatalf("K=0 with a bias gave %v, want the bias in every row", c)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "bias has 2 elements") {
			t.Fatalf("a short bias: recovered %v, want a panic naming its length", r)
		}
	}()
	SgemmBiasThreads(1, false, false, 1, 3, 1, 1, []float32{1}, 1, []float32{1, 2, 3}, 3, []float32{1, 2}, []float32{0, 0, 0}, 3)
}

// TestSharedTailsMatchOneThread checks that panels of a task's last kc block computed by
// another worker, from a workspace of its own (one panel, or all that are left), give the
// bits of one thread computing everything, with beta, a bias, rounded operands and bfloat16 B.
func TestSharedTailsMatchOneThread(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	t.Cleanup(func() { tailOpened = nil })
	steal := func(j *job, task int) {
		ws := newWorkspace()
		i0, i1, j0, j1 := j.taskBlock(task)
		kc := j.kern.kcBlock()
		pc := (j.k - 1) / kc * kc
		ws.fit(kc*maxMC, kc)
		j.packABlock(ws.ap, i0, i1, pc, j.k-pc)
		if jr := j0 + int(j.tails[task].next.Add(1)-1)*j.kern.nr; jr < j1 {
			j.panel(ws, ws.ap, i0, i1, jr, min(j.kern.nr, j1-jr), pc, j.k-pc)
		}
		if task%2 == 1 {
			j.shareTails(ws)
		}
	}
	for _, kern := range kernels {
		useKernel(t, kern)
		for _, s := range []shape{{37, 70, 1100}, {64, 200, 300}, {130, 90, 100}} {
			for tr := 0; tr < 4; tr++ {
				o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
				bias := randSlice(r, s.n)
				bh := make([]uint16, len(o.b))
				BF16Bits(bh, o.b)
				var got [2][4][]float32
				for w, th := range []int{1, 2} {
					tailOpened = nil
					if th > 1 {
						tailOpened = steal
					}
					got[w] = fourProducts(th, s, o, bias, bh)
				}
				for v := range got[0] {
					for i := range got[0][v] {
						if math.Float32bits(got[0][v][i]) != math.Float32bits(got[1][v][i]) {
							t.Fatalf("%s %+v transA=%v transB=%v call %d: c[%d] = %v on one thread, %v with shared tails",
								kern.name, s, o.transA, o.transB, v, i, got[0][v][i], got[1][v][i])
						}
					}
				}
			}
		}
	}
}

// fourProducts runs the four kinds of product on o from copies of C with th threads: plain
// (alpha 0.5, beta 0.3), with bias, with bfloat16-rounded operands and, where B is transposed,
// with bfloat16 B (bh), else C as it was.
func fourProducts(th int, s shape, o *operands, bias []float32, bh []uint16) [4][]float32 {
	var got [4][]float32
	for v := range got {
		got[v] = append([]float32(nil), o.c...)
	}
	SgemmThreads(th, o.transA, o.transB, s.m, s.n, s.k, 0.5, o.a, o.lda, o.b, o.ldb, 0.3, got[0], o.ldc)
	SgemmBiasThreads(th, o.transA, o.transB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, bias, got[1], o.ldc)
	SgemmPrecisionThreads(th, tensor.BF16, o.transA, o.transB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, got[2], o.ldc)
	if o.transB {
		SgemmBF16Threads(th, o.transA, s.m, s.n, s.k, 1, o.a, o.lda, bh, o.ldb, 0, got[3], o.ldc)
	}
	return got
}
