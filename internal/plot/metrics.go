// Package plot draws the metric curves of one or more training runs to a PNG or SVG file.
//
// [Load] reads a run's metrics.jsonl into a [Run], one series of [Point] values per metric,
// thinned by [Downsample] as it reads so that memory stays bounded. [Pick] chooses the metrics
// to draw, [Defaults] (loss, reward, KL, ...) when none are named, and [Draw] writes one panel
// per metric against the step, the runs overlaid.
package plot

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rundir"
)

// Run is the numeric series of one run's metrics file, keyed by metric name.
type Run struct {
	Name   string
	Path   string
	Series map[string][]Point // in step order, thinned to what a picture can show (see Downsample)
	Torn   int                // lines that did not parse (a torn last line after a crash), skipped
	// BadSteps counts lines whose step is not a number from -2^53 to 2^53, skipped.
	BadSteps int
	// NonFinite counts, by metric, values that are NaN, infinite or beyond float64's range
	// (written as "NaN", "+Inf", "-Inf" or 1e999), skipped.
	NonFinite map[string]int
	// Unread counts values of metrics past the first maxMetrics names (or non-finite
	// values past maxMetrics names), skipped.
	Unread int
}

// Point is one value of a metric at a step.
type Point struct {
	Step  float64
	Value float64
}

// maxMetrics bounds how many series one file can make: a real run has a few dozen.
const maxMetrics = 1000

// maxStep is the largest step taken: steps are counts, exact in a float64 up to 2^53.
const maxStep = 1 << 53

// Load reads path, a run directory (its metrics.jsonl) or a metrics file. Every numeric field
// of a line with a "step" becomes a point of the series of that name; lines without a step
// and lines that do not parse are skipped, bad steps and non-finite values skipped and
// counted. The file is read as a stream and each series kept thinned (Downsample), so memory
// stays bounded however long the file is.
func Load(path string) (*Run, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, rundir.Metrics)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("curves: %w", err)
	}
	defer f.Close()
	name := filepath.Base(filepath.Clean(path))
	if name == rundir.Metrics {
		name = filepath.Base(filepath.Dir(filepath.Clean(path)))
	}
	r := &Run{Name: name, Path: file, Series: map[string][]Point{}, NonFinite: map[string]int{}}
	series := map[string]*binner{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var fs []field
	for line := int64(1); sc.Scan(); line++ {
		var ok bool
		if fs, ok = fields(sc.Bytes(), fs); !ok {
			r.Torn++
			continue
		}
		step, has, ok := stepOf(fs)
		if !has {
			continue
		}
		if !ok {
			r.BadSteps++
			continue
		}
		for _, f := range fs {
			x, ok := number(f.val)
			switch {
			case string(f.key) == "step" || !ok && !nonFinite(f.val):
				continue
			case !ok || math.IsInf(x, 0):
				if _, seen := r.NonFinite[string(f.key)]; !seen && len(r.NonFinite) == maxMetrics {
					r.Unread++
				} else {
					r.NonFinite[string(f.key)]++
				}
				continue
			}
			b := series[string(f.key)]
			if b == nil {
				if len(series) == maxMetrics {
					r.Unread++
					continue
				}
				b = &binner{}
				series[string(f.key)] = b
			}
			b.add(seqPoint{Point{step, x}, line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("curves: reading %s: %w", file, err)
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("curves: %s holds no metrics with a step", file)
	}
	for k, b := range series {
		r.Series[k] = b.points()
	}
	return r, nil
}

// Skipped says what of the file is not in the series, one sentence each, naming the file.
func (r *Run) Skipped() []string {
	var out []string
	if r.Torn > 0 {
		out = append(out, fmt.Sprintf("%s: skipped %d lines that are not JSON objects (a torn last line after a crash?)", r.Path, r.Torn))
	}
	if r.BadSteps > 0 {
		out = append(out, fmt.Sprintf("%s: skipped %d lines whose step is not a number from -2^53 to 2^53", r.Path, r.BadSteps))
	}
	names := make([]string, 0, len(r.NonFinite))
	for k := range r.NonFinite {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, fmt.Sprintf("%s: skipped %d NaN or infinite values of %s", r.Path, r.NonFinite[k], k))
	}
	if r.Unread > 0 {
		out = append(out, fmt.Sprintf("%s: skipped %d values of metrics past the first %d names", r.Path, r.Unread, maxMetrics))
	}
	return out
}

// stepOf returns a line's step: has says there is one, ok that it is a number within ±2^53.
func stepOf(fs []field) (step float64, has, ok bool) {
	for _, f := range fs {
		if string(f.key) == "step" {
			step, ok = number(f.val)
			return step, true, ok && math.Abs(step) <= maxStep
		}
	}
	return 0, false, false
}

// number reads a JSON number; one beyond float64's range reads as an infinity.
func number(raw []byte) (float64, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

// nonFinite reports a string a metrics writer puts for a value JSON cannot hold.
func nonFinite(raw []byte) bool {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return false
	}
	switch strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")) {
	case "nan", "inf", "infinity":
		return true
	}
	return false
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
