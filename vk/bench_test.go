package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

func benchBackend(b *testing.B) *Backend {
	be := NewBackendOn(device(b))
	b.Cleanup(func() { be.Close() })
	return be
}

// BenchmarkDispatchOverhead records 100 dependent tiny dispatches and submits them once: the
// per-dispatch cost of descriptor writes, barriers and the purego calls.
func BenchmarkDispatchOverhead(b *testing.B) {
	be := benchBackend(b)
	x, _ := tensor.New(be, tensor.Float32, 256)
	for b.Loop() {
		for range 100 {
			be.Scale(x, 1)
		}
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/dispatch")
}

func BenchmarkAdd4M(b *testing.B) {
	be := benchBackend(b)
	const n = 4 << 20
	x, _ := tensor.New(be, tensor.Float32, n)
	y, _ := tensor.New(be, tensor.Float32, n)
	b.SetBytes(3 * 4 * n)
	for b.Loop() {
		be.Add(x, x, y)
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSum4M(b *testing.B) {
	be := benchBackend(b)
	const n = 4 << 20
	x, _ := tensor.New(be, tensor.Float32, n)
	out, _ := tensor.New(be, tensor.Float32, 1)
	b.SetBytes(4 * n)
	for b.Loop() {
		be.Sum(out, x)
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUploadDownload16MB(b *testing.B) {
	be := benchBackend(b)
	const n = 4 << 20
	x, _ := tensor.New(be, tensor.Float32, n)
	host := make([]float32, n)
	b.SetBytes(2 * 4 * n)
	for b.Loop() {
		if err := be.Upload(x, host); err != nil {
			b.Fatal(err)
		}
		if err := be.Download(host, x); err != nil {
			b.Fatal(err)
		}
	}
}
