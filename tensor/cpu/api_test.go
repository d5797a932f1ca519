package cpu

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

func TestStorageErrors(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	if b.Name() != "cpu" || b.Threads() != 2 || b.Sync() != nil {
		t.Fatalf("Name %q Threads %d", b.Name(), b.Threads())
	}
	if _, err := b.Alloc(tensor.Float32, -1); err == nil {
		t.Error("Alloc(-1) gave no error")
	}
	if _, err := b.Alloc(tensor.DType(9), 3); err == nil || !strings.Contains(err.Error(), "DType(9)") {
		t.Errorf("Alloc of an unknown dtype: %v", err)
	}
	x, _ := tensor.New(b, tensor.Float32, 2, 3)
	ix, _ := tensor.New(b, tensor.Int32, 4)
	if err := b.Upload(x, make([]float32, 5)); err == nil || !strings.Contains(err.Error(), "5 values") {
		t.Errorf("Upload of 5 values into 6: %v", err)
	}
	if err := b.Download(make([]float32, 7), x); err == nil || !strings.Contains(err.Error(), "7 values") {
		t.Errorf("Download of 6 into 7: %v", err)
	}
	if err := b.UploadInt32(x, make([]int32, 6)); err == nil || !strings.Contains(err.Error(), "want int32") {
		t.Errorf("UploadInt32 into float32: %v", err)
	}
	if err := b.Upload(ix, make([]float32, 4)); err == nil || !strings.Contains(err.Error(), "want float32") {
		t.Errorf("Upload into int32: %v", err)
	}
	if err := b.DownloadInt32(make([]int32, 3), ix); err == nil {
		t.Error("DownloadInt32 of 4 into 3 gave no error")
	}
	// Round trips through a view at an offset.
	v := x.View(2, 4)
	if err := b.Upload(v, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 6)
	if err := b.Download(got, x); err != nil || !bitsEqual(got, []float32{0, 0, 1, 2, 3, 4}) {
		t.Errorf("Download after a view upload: %v %v", got, err)
	}
	if err := b.UploadInt32(ix, []int32{7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	gi := make([]int32, 4)
	if err := b.DownloadInt32(gi, ix); err != nil || gi[3] != 10 {
		t.Errorf("int32 round trip: %v %v", gi, err)
	}
	// Storage from another backend is refused.
	other := NewWithThreads(1)
	y, _ := tensor.New(other, tensor.Float32, 6)
	y.Storage = foreign{}
	if err := b.Upload(y, make([]float32, 6)); err == nil || !strings.Contains(err.Error(), "not in CPU storage") {
		t.Errorf("Upload into foreign storage: %v", err)
	}
	b.Free(x.Storage)
	if x.Storage.Len() != 0 {
		t.Error("Free kept the storage")
	}
}

type foreign struct{}

func (foreign) Backend() tensor.Backend { return nil }
func (foreign) DType() tensor.DType     { return tensor.Float32 }
func (foreign) Len() int                { return 6 }

// mustPanic runs f and checks that it panics with a message containing each of want.
func mustPanic(t *testing.T, f func(), want ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		msg := fmt.Sprint(r)
		if r == nil {
			t.Errorf("no panic, want %q", want)
			return
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("panic %q does not mention %q", msg, w)
			}
		}
	}()
	f()
}

func TestProgrammingErrorsPanic(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	f := func(n int) *tensor.Tensor { x, _ := tensor.New(b, tensor.Float32, n); return x }
	tok, _ := tensor.FromInt32(b, []int32{0, 5}, 2)
	mustPanic(t, func() { b.LayerNormForward(f(6), f(2), f(2), f(5), f(3), f(3), 2, 3) }, "LayerNormForward", "inp", "5", "6")
	mustPanic(t, func() { b.Add(f(4), f(4), f(3)) }, "Add", "b")
	mustPanic(t, func() { b.Copy(f(4), f(3)) }, "Copy")
	mustPanic(t, func() { b.AttentionForward(f(12), f(8), f(36), 1, 2, 6, 4) }, "AttentionForward", "NH=4")
	mustPanic(t, func() { b.EncoderForward(f(8), tok, f(8), f(8), 1, 2, 4) }, "EncoderForward", "token 5", "[0,2)")
	mustPanic(t, func() { b.CrossEntropyForward(f(2), f(8), f(8), tok, 2, 4, 4) }, "CrossEntropyForward", "target 5")
	mustPanic(t, func() { b.CrossEntropyForward(f(2), f(8), f(8), tok, 2, 5, 4) }, "V=5")
	mustPanic(t, func() { b.LogSoftmaxGather(f(2), nil, f(16), tok, nil, 2, 8, 8, 0) }, "LogSoftmaxGather", "temperature 0")
	mustPanic(t, func() { b.AttentionDecode(f(6), f(12), f(12), f(18), 1, 1, 2, 2, 6, 2) }, "AttentionDecode", "cache length 2")
	mustPanic(t, func() { b.MatMul(f(6), f(5), f(6), nil, tensor.MatMulParams{M: 2, N: 3, K: 3}) }, "MatMul", "a has 5")
	mustPanic(t, func() { b.AdamW(f(2), f(2), f(2), f(2), tensor.AdamWParams{}) }, "AdamW", "step 0")
	mustPanic(t, func() { b.Fill(tok, 1) }, "Fill", "want float32")
	mustPanic(t, func() { Float32s(tok) }, "want float32")
	mustPanic(t, func() { Int32s(f(2)) }, "want int32")
	mustPanic(t, func() { b.BiasBackward(f(3), f(6), -2, 3) }, "negative dimension -2")
}

// TestBackendsShareHelpers checks that backends start no goroutines of their own: many
// backends running parallel operations share the process's helpers, and Close leaves a
// working single-threaded backend.
func TestBackendsShareHelpers(t *testing.T) {
	warm := NewWithThreads(6)
	x, _ := tensor.FromSlice(warm, make([]float32, 1<<18), 1<<18)
	warm.Fill(x, 1) // starts the helpers a 6-thread backend asks for
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		b := NewWithThreads(6)
		y, _ := tensor.FromSlice(b, make([]float32, 1<<18), 1<<18)
		b.Fill(y, 2)
		b.Scale(y, 2)
		if v := Float32s(y)[1<<17]; v != 4 {
			t.Fatalf("backend %d: Fill then Scale gave %v, want 4", i, v)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("20 backends left %d goroutines running, %d before", after, before)
	}
	warm.Close()
	warm.Close()
	warm.Scale(x, 3)
	if v := Float32s(x)[5]; v != 3 || warm.Threads() != 1 {
		t.Fatalf("after Close: Scale gave %v on %d threads, want 3 on 1", v, warm.Threads())
	}
}
