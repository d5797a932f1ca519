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

// BenchmarkAdamW4M updates 4M parameters: seven float streams (p, g, m, v read; p, m, v
// written). Aligned views take adamw_vec4, views one element off the scalar adamw.
func BenchmarkAdamW4M(b *testing.B) {
	for _, c := range []struct {
		name string
		off  int
	}{{"vec4", 0}, {"scalar", 1}} {
		b.Run(c.name, func(b *testing.B) {
			be := benchBackend(b)
			const n = 4 << 20
			var ts [4]*tensor.Tensor
			for i := range ts {
				full, err := tensor.New(be, tensor.Float32, n+c.off)
				if err != nil {
					b.Fatal(err)
				}
				be.Fill(full, 0.5)
				ts[i] = full.View(c.off, n)
			}
			p := tensor.AdamWParams{LR: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1}
			b.SetBytes(7 * 4 * n)
			for b.Loop() {
				be.AdamW(ts[0], ts[1], ts[2], ts[3], p)
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
