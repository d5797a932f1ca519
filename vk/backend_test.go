package vk

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// backends returns a backend with the device's real limits and one with tiny limits, which
// forces the grid-stride loops and the chunking by storage-buffer window on small inputs.
func backends(t *testing.T) map[string]*Backend {
	d := device(t)
	real := NewBackendOn(d)
	tiny := NewBackendOn(d)
	tiny.maxGroups = 3
	tiny.maxChunk = 1000
	t.Cleanup(func() {
		for _, b := range []*Backend{real, tiny} {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return map[string]*Backend{"limits=device": real, "limits=tiny": tiny}
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func download(t *testing.T, b *Backend, x *tensor.Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Numel())
	if err := b.Download(out, x); err != nil {
		t.Fatal(err)
	}
	return out
}

func assertExact(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %g, want %g (exactly)", what, i, got[i], want[i])
		}
	}
}

var testSizes = []int{1, 7, 1000, 4099, 100003}

func TestElementwiseOps(t *testing.T) {
	for name, b := range backends(t) {
		for _, n := range testSizes {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			a, c := randVec(r, n), randVec(r, n)
			ta, tc := backendtest.OnBackend(t, b, a, 3), backendtest.OnBackend(t, b, c, 17)
			out := backendtest.OnBackend(t, b, make([]float32, n), 1)

			b.Add(out, ta, tc)
			want := make([]float32, n)
			for i := range want {
				want[i] = a[i] + c[i]
			}
			assertExact(t, name+" Add", download(t, b, out), want)

			b.Mul(out, ta, tc)
			for i := range want {
				want[i] = a[i] * c[i]
			}
			assertExact(t, name+" Mul", download(t, b, out), want)

			// out aliases a: out = a + a, then a = a * c in place.
			b.Add(out, out, out)
			for i := range want {
				want[i] += want[i]
			}
			assertExact(t, name+" Add aliased", download(t, b, out), want)
			b.Mul(ta, ta, tc)
			for i := range a {
				a[i] *= c[i]
			}
			assertExact(t, name+" Mul in place", download(t, b, ta), a)

			const alpha = float32(-0.37)
			b.Axpy(out, alpha, tc)
			for i := range want {
				want[i] += float32(alpha * c[i])
			}
			assertExact(t, name+" Axpy", download(t, b, out), want)

			b.Scale(out, 1.5)
			for i := range want {
				want[i] *= 1.5
			}
			assertExact(t, name+" Scale", download(t, b, out), want)

			b.Copy(tc, out)
			assertExact(t, name+" Copy", download(t, b, tc), want)

			b.Fill(out, 2.25)
			for i := range want {
				want[i] = 2.25
			}
			assertExact(t, name+" Fill", download(t, b, out), want)
		}
	}
}

// TestOpsStayInsideViews checks that ops write exactly the elements of their view: one that
// starts and ends off a vec4, and one that fill_vec4 and copy_vec4 cover.
func TestOpsStayInsideViews(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	for _, s := range []struct{ off, n int }{{5, 50}, {8, 40}} {
		wide := s.off%4 == 0 && s.n%4 == 0
		full, err := tensor.New(b, tensor.Float32, 64)
		if err != nil {
			t.Fatal(err)
		}
		other, err := tensor.New(b, tensor.Float32, 64)
		if err != nil {
			t.Fatal(err)
		}
		b.Fill(full, -1)
		b.Fill(other, -2)
		v, w := full.View(s.off, s.n), other.View(s.off, s.n)
		calls := mmRunKernels(t, b, func() {
			b.Fill(v, 3)
			b.Scale(v, 2)
			b.Copy(w, v)
		})
		for _, k := range []string{"fill_vec4", "copy_vec4"} {
			if (calls[k] == 1) != wide {
				t.Errorf("view [%d, %d): %s ran %d times, want it to run: %v", s.off, s.off+s.n, k, calls[k], wide)
			}
		}
		for _, c := range []struct {
			t       *tensor.Tensor
			outside float32
		}{{full, -1}, {other, -2}} {
			for i, x := range download(t, b, c.t) {
				want := c.outside
				if i >= s.off && i < s.off+s.n {
					want = 6
				}
				if x != want {
					t.Fatalf("view [%d, %d): element %d = %g, want %g", s.off, s.off+s.n, i, x, want)
				}
			}
		}
	}
}

func TestInt32FillCopyRoundTrip(t *testing.T) {
	for name, b := range backends(t) {
		n := 2345
		src := make([]int32, n)
		for i := range src {
			src[i] = int32(i*7919) - 1<<20
		}
		a, err := tensor.FromInt32(b, src, n)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := tensor.New(b, tensor.Int32, n+9)
		cv := c.View(9, n)
		b.Copy(cv, a)
		got := make([]int32, n)
		if err := b.DownloadInt32(got, cv); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != src[i] {
				t.Fatalf("%s: copied int32[%d] = %d, want %d", name, i, got[i], src[i])
			}
		}
		b.Fill(a, -42)
		if err := b.DownloadInt32(got, a); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != -42 {
				t.Fatalf("%s: filled int32[%d] = %d, want -42", name, i, got[i])
			}
		}
	}
}

func TestReductions(t *testing.T) {
	for name, b := range backends(t) {
		for _, n := range append([]int{0}, testSizes...) {
			r := rand.New(rand.NewPCG(uint64(n), 2))
			x := randVec(r, n)
			tx := backendtest.OnBackend(t, b, x, 11)
			out := backendtest.OnBackend(t, b, []float32{123}, 2)
			var sum, sumsq, abs float64
			for _, v := range x {
				sum += float64(v)
				sumsq += float64(v) * float64(v)
				abs += math.Abs(float64(v))
			}
			b.Sum(out, tx)
			got := download(t, b, out)[0]
			if tol := 1e-6*abs + 1e-30; math.Abs(float64(got)-sum) > tol {
				t.Errorf("%s: Sum of %d = %g, want %g ± %g", name, n, got, sum, tol)
			}
			b.Sum(out, tx)
			if again := download(t, b, out)[0]; math.Float32bits(again) != math.Float32bits(got) {
				t.Errorf("%s: Sum of %d not repeatable: %g then %g", name, n, got, again)
			}
			b.SumSquares(out, tx)
			got = download(t, b, out)[0]
			if tol := 1e-6*sumsq + 1e-30; math.Abs(float64(got)-sumsq) > tol {
				t.Errorf("%s: SumSquares of %d = %g, want %g ± %g", name, n, got, sumsq, tol)
			}
		}
	}
}

func TestUploadDownloadErrors(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	x, err := tensor.New(b, tensor.Float32, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Upload(x, make([]float32, 9)); err == nil || !strings.Contains(err.Error(), "9 values") {
		t.Errorf("Upload of 9 values into 10 elements: %v", err)
	}
	if err := b.UploadInt32(x, make([]int32, 10)); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Errorf("UploadInt32 into a float32 tensor: %v", err)
	}
	if err := b.Download(make([]float32, 11), x); err == nil {
		t.Error("Download of 10 elements into 11 values succeeded")
	}
	if _, err := b.Alloc(tensor.Float32, -1); err == nil {
		t.Error("Alloc of -1 elements succeeded")
	}
}

// TestLargeTransfer moves more than the staging ring in both directions.
func TestLargeTransfer(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	n := int(stagingSize(b.dev.Info)/4) + 12345
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
	}
	tx, err := tensor.FromSlice(b, x, n)
	if err != nil {
		t.Fatal(err)
	}
	got := download(t, b, tx)
	assertExact(t, "round trip", got, x)
	b.Free(tx.Storage)
}

func TestName(t *testing.T) {
	b := NewBackendOn(device(t))
	defer b.Close()
	if !strings.HasPrefix(b.Name(), "vulkan:") || !strings.Contains(b.Name(), b.dev.Info.Name) {
		t.Errorf("Name() = %q", b.Name())
	}
}
