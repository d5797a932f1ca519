package tensor

import (
	"math"
	"sort"
	"time"
)

// KernelTime is the time a backend spent in one kernel or op over Count calls.
type KernelTime struct {
	Kernel string
	Count  int
	Total  time.Duration
	// Flops and Bytes are the arithmetic and memory traffic of those calls, where the op
	// reported them (0 where not), for achieved GFLOP/s and GB/s.
	Flops, Bytes float64
}

// ProfileTable sorts times largest first (then by name) and returns one row per kernel with
// kernel, calls, total_ms, mean_us and share (of the summed time): the format of every
// backend's KernelProfile.
func ProfileTable(times []KernelTime) []map[string]any {
	sort.Slice(times, func(i, j int) bool {
		if times[i].Total != times[j].Total {
			return times[i].Total > times[j].Total
		}
		return times[i].Kernel < times[j].Kernel
	})
	var total time.Duration
	for _, t := range times {
		total += t.Total
	}
	round := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	rows := make([]map[string]any, 0, len(times))
	for _, t := range times {
		ns := float64(t.Total)
		row := map[string]any{
			"kernel":   t.Kernel,
			"calls":    t.Count,
			"total_ms": round(ns / 1e6),
			"mean_us":  round(ns / 1e3 / float64(max(t.Count, 1))),
			"share":    round(ns / float64(max(total, 1))),
		}
		if t.Flops > 0 && ns > 0 {
			row["gflops"] = round(t.Flops / ns)
		}
		if t.Bytes > 0 && ns > 0 {
			row["gbps"] = round(t.Bytes / ns)
		}
		rows = append(rows, row)
	}
	return rows
}
