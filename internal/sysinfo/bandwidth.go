package sysinfo

import (
	"runtime"
	"sync"
	"time"
)

// ReadBandwidth measures how fast all cores can stream through a buffer of the given size
// (bytes/s of reads), best of a few passes; it is the roof that memory-bound decoding is
// compared with.
func ReadBandwidth(bytes int) float64 {
	n := bytes / 4
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = float32(i & 7)
	}
	workers := runtime.GOMAXPROCS(0)
	best := 0.0
	sink := make([]float32, workers)
	for rep := 0; rep < 4; rep++ {
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				part := buf[w*n/workers : (w+1)*n/workers]
				var s0, s1, s2, s3 float32
				for i := 0; i+3 < len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sink[w] = s0 + s1 + s2 + s3
			}(w)
		}
		wg.Wait()
		if bw := float64(4*n) / time.Since(start).Seconds(); bw > best {
			best = bw
		}
	}
	runtime.KeepAlive(sink)
	return best
}
