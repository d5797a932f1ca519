// Package curves reads a run's metrics.jsonl and draws its curves (loss, reward, KL, ...)
// against the step, several runs overlaid, to a PNG or SVG file.
package curves

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// Run is the numeric series of one run's metrics file, keyed by metric name.
type Run struct {
	Name   string
	Path   string
	Series map[string][]Point
	Torn   int // lines that did not parse (a torn last line after a crash), skipped
}

// Point is one value of a metric at a step.
type Point struct {
	Step  float64
	Value float64
}

// Load reads path, a run directory (its metrics.jsonl) or a metrics file. Every numeric field
// of a line with a "step" becomes a point of the series of that name; lines without a step,
// non-finite values and lines that do not parse are skipped.
func Load(path string) (*Run, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, "metrics.jsonl")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("curves: %w", err)
	}
	defer f.Close()
	name := filepath.Base(filepath.Clean(path))
	if name == "metrics.jsonl" {
		name = filepath.Base(filepath.Dir(filepath.Clean(path)))
	}
	r := &Run{Name: name, Path: file, Series: map[string][]Point{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			r.Torn++
			continue
		}
		step, ok := obj["step"].(float64)
		if !ok {
			continue
		}
		for k, v := range obj {
			x, ok := v.(float64)
			if !ok || k == "step" || math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			r.Series[k] = append(r.Series[k], Point{step, x})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("curves: reading %s: %w", file, err)
	}
	if len(r.Series) == 0 {
		return nil, fmt.Errorf("curves: %s holds no metrics with a step", file)
	}
	for _, s := range r.Series {
		sort.SliceStable(s, func(i, j int) bool { return s[i].Step < s[j].Step })
	}
	return r, nil
}

// Defaults are the metrics drawn when none are asked for, in panel order; each entry lists
// names of one quantity as different commands and versions write it, and the first present wins.
var Defaults = [][]string{
	{"loss"},
	{"val_loss"},
	{"reward", "reward_mean"},
	{"kl", "kl_mean"},
	{"entropy", "entropy_mean"},
	{"clip_ratio/region_mean", "clip_ratio_region_mean"},
	{"accuracy"},
	{"value_loss"},
	{"completions/mean_length", "completion_length_mean"},
	{"grad_norm"},
}

// Pick returns the metrics to draw: names when given (an error names a metric no run has),
// else the first present name of each default present in any run.
func Pick(runs []*Run, names []string) ([]string, error) {
	has := func(n string) bool {
		for _, r := range runs {
			if len(r.Series[n]) > 0 {
				return true
			}
		}
		return false
	}
	if len(names) > 0 {
		for _, n := range names {
			if !has(n) {
				return nil, fmt.Errorf("curves: no run has metric %q (it has: %v)", n, available(runs))
			}
		}
		return names, nil
	}
	var out []string
	for _, alts := range Defaults {
		for _, n := range alts {
			if has(n) {
				out = append(out, n)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("curves: none of the usual metrics is present; pick some of %v", available(runs))
	}
	return out, nil
}

func available(runs []*Run) []string {
	seen := map[string]bool{}
	for _, r := range runs {
		for k := range r.Series {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
