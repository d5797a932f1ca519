package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s[%d] = %v, portable loop %v", what, i, got[i], want[i])
		}
	}
}

// TestReductionKernels checks the vector reductions against their portable loops bit for bit
// (lengths and column counts that leave tails), and the sums against float64 references.
func TestReductionKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{0, 1, 15, 16, 17, 100, 4099} {
		x := randn(r, n, 1)
		for _, sq := range []bool{false, true} {
			var acc [16]float64
			got, want := sumLanes(x, sq), sumLanesFrom(x, &acc, sq, 0)
			if got != want {
				t.Errorf("sumLanes(n=%d, squares=%v) = %v, portable loop %v", n, sq, got, want)
			}
			var ref float64
			for _, v := range x {
				if sq {
					ref += float64(v) * float64(v)
				} else {
					ref += float64(v)
				}
			}
			if math.Abs(got-ref) > 1e-12*(1+math.Abs(ref)) {
				t.Errorf("sumLanes(n=%d, squares=%v) = %v, float64 reference %v", n, sq, got, ref)
			}
		}
	}
	for _, cols := range []int{1, 31, 32, 33, 96, 101} {
		for _, rows := range []int{1, 7, 64} {
			stride := cols + 3
			d, x := randn(r, rows*stride, 1), randn(r, rows*stride, 1)
			mean, rstd := randn(r, rows, 1), randn(r, rows, 1)
			db := randn(r, cols, 1)
			want := clone(db)
			colSum(db, d, rows, stride)
			colSumFrom(want, d, rows, stride, 0)
			sameBits(t, "colSum", db, want)

			dw, db2 := randn(r, cols, 1), randn(r, cols, 1)
			wantW, wantB := clone(dw), clone(db2)
			lnColSums(dw, db2, x, d, mean, rstd, rows, stride)
			lnColSumsFrom(wantW, wantB, x, d, mean, rstd, rows, stride, 0)
			sameBits(t, "lnColSums dweight", dw, wantW)
			sameBits(t, "lnColSums dbias", db2, wantB)
		}
	}
}

// TestLayerNormRowKernels checks the vector LayerNorm rows against the portable loops bit for
// bit, for row lengths the kernel takes and ones it leaves to the loops.
func TestLayerNormRowKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, C := range []int{8, 24, 768, 770} {
		x, w, bias, dout := randn(r, C, 1), randn(r, C, 1), randn(r, C, 1), randn(r, C, 1)
		for i := range x {
			x[i] = x[i]*3 + 1 // an offset mean, so the variance pass matters
		}
		out, want := make([]float32, C), make([]float32, C)
		m, s := lnForwardRow(out, x, w, bias)
		wm, ws := lnForwardRowGo(want, x, w, bias)
		if m != wm || s != ws {
			t.Errorf("C=%d: mean, rstd %v %v, portable loop %v %v", C, m, s, wm, ws)
		}
		sameBits(t, "lnForwardRow", out, want)
		d, wd := randn(r, C, 1), make([]float32, C)
		copy(wd, d)
		lnBackwardRow(d, dout, x, w, m, s)
		lnBackwardRowGo(wd, dout, x, w, m, s)
		sameBits(t, "lnBackwardRow", d, wd)
	}
}

// TestFillStream checks the streaming fill on every alignment and length around its vector
// width, without touching neighbours.
func TestFillStream(t *testing.T) {
	buf := make([]float32, 300)
	for off := range 9 {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 257} {
			for i := range buf {
				buf[i] = -1
			}
			fillStream(buf[off:off+n], 2.5)
			for i, v := range buf {
				want := float32(-1)
				if i >= off && i < off+n {
					want = 2.5
				}
				if v != want {
					t.Fatalf("offset %d, length %d: x[%d] = %v, want %v", off, n, i, v, want)
				}
			}
		}
	}
}

// BenchmarkFillLarge zeroes a gradient-sized buffer (the streaming-store path).
func BenchmarkFillLarge(b *testing.B) {
	be := New()
	defer be.Close()
	x := benchTensor(b, be, 4*benchParams, 1)
	measure(b, 4*4*benchParams, 0, func() { be.Fill(x, 0) })
}

// TestExpShiftSum checks expf32 against math.Exp in float32 ulps (denormal results included)
// and the vector expShiftSum against the portable loop bit for bit.
func TestExpShiftSum(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	worst := 0.0
	for i := 0; i < 200000; i++ {
		x := float32(r.Float64()*192.7 - 104)
		got, want := expf32(x), math.Exp(float64(x))
		w := float32(want)
		if got == w {
			continue
		}
		ulp := float64(math.Nextafter32(w, float32(math.Inf(1))) - w)
		worst = max(worst, math.Abs(float64(got)-want)/ulp)
	}
	if worst > 2 {
		t.Errorf("expf32: worst error %.2f ulps", worst)
	}
	t.Logf("expf32: worst error %.2f float32 ulps on [-104, 88.7]", worst)
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{{0, 1}, {-inf, 0}, {-200, 0}, {89, inf}, {inf, inf}} {
		if got := expf32(c.x); got != c.want {
			t.Errorf("expf32(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := expf32(float32(math.NaN())); got == got {
		t.Errorf("expf32(NaN) = %v", got)
	}
	for _, n := range []int{1, 7, 8, 9, 64, 1001} {
		src := randn(r, n, 1)
		for i := range src {
			src[i] *= 30
		}
		src[0] = -inf
		if n > 2 {
			src[2] = float32(math.NaN())
		}
		dst := make([]float32, n)
		sum := expShiftSum(dst, src, 3)
		want := make([]float32, n)
		var acc [8]float32
		for i, v := range src {
			want[i] = expf32(v - 3)
			acc[i%8] += want[i]
		}
		ws := lanes8Sum(&acc)
		sameBits(t, "expShiftSum", dst, want)
		if math.Float32bits(sum) != math.Float32bits(ws) && !(sum != sum && ws != ws) {
			t.Errorf("n=%d: sum %v, portable %v", n, sum, ws)
		}
	}
}
