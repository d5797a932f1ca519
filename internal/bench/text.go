package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteText writes a report for a person: its settings, a line per row or a table of RL
// phases, and the per-kernel profile when the report has one. Besides a benchmark's own keys
// it reads "preset", "device" and "precision", which the caller sets.
func WriteText(w io.Writer, r map[string]any) {
	if r["bench"] == "rl" {
		writeRL(w, r)
		return
	}
	fmt.Fprintf(w, "%s on %s, preset %s", r["bench"], r["device"], r["preset"])
	if p, ok := r["precision"].(string); ok && p != "fp32" {
		fmt.Fprintf(w, ", %s products", p)
	}
	if r["recompute"] == true {
		fmt.Fprint(w, ", recompute")
	}
	fmt.Fprintln(w)
	if rows, ok := r["rows"].([]map[string]any); ok {
		for _, row := range rows {
			raw, _ := json.Marshal(row)
			fmt.Fprintf(w, "  %s\n", raw)
		}
	}
	keys := []string{"ranks", "batch", "seq", "steps", "lora_rank", "trained_params", "ms_per_step", "tokens_per_s", "model_gflop_per_step", "achieved_gflops",
		"peak_gflops", "peak_threads", "peak_kernel", "peak_fraction", "peak_coopmat_gflops", "coopmat_peak_fraction", "dispatches_per_step", "barriers_per_step", "submits_per_step", "descriptor_writes_per_step",
		"read_bandwidth_gb_per_s", "weight_bytes", "weight_copy_bytes", "comm_bytes_per_step", "comm_seconds_per_step", "comm_wait_seconds_per_step", "peak_rss_bytes"}
	for _, k := range keys {
		if v, ok := r[k]; ok {
			fmt.Fprintf(w, "  %-26s %s\n", k, readable(v))
		}
	}
	switch p := r["profile"].(type) {
	case []map[string]any:
		fmt.Fprintf(w, "\n  %-32s %7s %11s %11s %7s %9s %8s %8s\n", "kernel", "calls", "total ms", "mean us", "share", "GFLOP/s", "GB/s", "of peak")
		for _, row := range p {
			if row["calls"] == nil { // the device's peak, measured by probes
				fmt.Fprintf(w, "  %-32v %7s %11s %11s %7s %9.1f %8.1f\n", row["kernel"], "", "", "", "", toFloat(row["gflops"]), toFloat(row["gbps"]))
				continue
			}
			fmt.Fprintf(w, "  %-32v %7v %11.3f %11.1f %6.1f%% %9s %8s %8s\n", row["kernel"], row["calls"], row["total_ms"], row["mean_us"],
				100*toFloat(row["share"]), optional(row["gflops"], "%.1f"), optional(row["gbps"], "%.1f"), optional(row["of_peak"], "%.1f%%", 100))
		}
	case nil:
	default:
		fmt.Fprintf(w, "  profile: %v\n", p)
	}
}

// writeRL writes an RL report as a table of phases.
func writeRL(w io.Writer, r map[string]any) {
	fmt.Fprintf(w, "rl (%s) on %s, preset %s: %v prompts x %v completions, %v prompt + %v new tokens\n",
		r["algo"], r["device"], r["preset"], r["prompts"], r["group_size"], r["prompt_len"], r["max_new_tokens"])
	fmt.Fprintf(w, "  %-13s %10s %7s %11s %10s %8s %9s %8s\n", "phase", "seconds", "share", "tokens/s", "GFLOP/s", "of FMA", "GB/s", "of read")
	step := toFloat(r["step_seconds"])
	for _, ph := range r["phases"].([]map[string]any) {
		s := toFloat(ph["seconds"])
		if in, ok := ph["in"]; ok {
			fmt.Fprintf(w, "  %-13v %10s  (in %v)\n", ph["phase"], "-", in)
			continue
		}
		fmt.Fprintf(w, "  %-13v %10.4f %6.1f%% %11.1f %10s %8s %9s %8s\n", ph["phase"], s, 100*s/step, toFloat(ph["tokens_per_s"]),
			optional(ph["gflops"], "%.2f"), optional(ph["peak_fraction"], "%.1f%%", 100), optional(ph["gb_per_s"], "%.2f"), optional(ph["bandwidth_fraction"], "%.1f%%", 100))
	}
	for _, k := range []string{"step_seconds", "phases_seconds", "other_seconds", "tokens_per_s", "rollout_tokens_per_s", "peak_gflops", "peak_threads",
		"read_bandwidth_gb_per_s", "weight_bytes", "peak_rss_bytes"} {
		if v, ok := r[k]; ok {
			fmt.Fprintf(w, "  %-26s %s\n", k, readable(v))
		}
	}
}

// readable writes a report value for a person: integers whole, fractions to four significant
// digits without an exponent.
func readable(v any) string {
	x, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	switch ax := math.Abs(x); {
	case x == math.Trunc(x) && ax < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 1000:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// optional formats a profile value, scaled, or leaves the column blank when it is absent.
func optional(v any, format string, scale ...float64) string {
	if v == nil {
		return ""
	}
	x := toFloat(v)
	for _, s := range scale {
		x *= s
	}
	return fmt.Sprintf(format, x)
}
