package plot

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDrawLongNoisySeries draws 2M steps of a loss and of pure noise (the slowest line
// to rasterize) to a PNG, as a long run's curves.png.
func BenchmarkDrawLongNoisySeries(b *testing.B) {
	const n = 2_000_000
	rng := rand.New(rand.NewSource(1))
	loss, noise := &binner{}, &binner{}
	for i, p := range noisy(n, 1) {
		loss.add(seqPoint{p, int64(i)})
		noise.add(seqPoint{Point{p.Step, rng.Float64()}, int64(i)})
	}
	r := &Run{Name: "long", Series: map[string][]Point{"loss": loss.points(), "grad_norm": noise.points()}}
	out := filepath.Join(b.TempDir(), "c.png")
	b.ResetTimer()
	for range b.N {
		if err := Draw([]*Run{r}, []string{"loss", "grad_norm"}, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadLongMetrics reads a metrics file of 200k training steps.
func BenchmarkLoadLongMetrics(b *testing.B) {
	path := filepath.Join(b.TempDir(), "metrics.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, p := range noisy(200_000, 1) {
		fmt.Fprintf(w, `{"step":%d,"loss":%v,"lr":0.0003,"grad_norm":%v,"tokens_per_s":12345.6}`+"\n", int(p.Step), p.Value, p.Value/10)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ResetTimer()
	for range b.N {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
