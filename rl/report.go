package rl

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rs/zerolog"
)

// TRLNames are the names TRL logs a quantity under, for the metrics vkgrad computes under names
// of its own; files, TensorBoard and the summary use them (MetricName), so curves compare with
// TRL runs. StepReport.Metrics keeps vkgrad's names.
var TRLNames = map[string]string{
	"reward_mean":            "reward",
	"kl_mean":                "kl",
	"entropy_mean":           "entropy",
	"completion_length_mean": "completions/mean_length",
	"completion_length_min":  "completions/min_length",
	"completion_length_max":  "completions/max_length",
	"truncated_fraction":     "completions/clipped_ratio",
	"clip_ratio_region_mean": "clip_ratio/region_mean",
	"clip_ratio_low_mean":    "clip_ratio/low_mean",
	"clip_ratio_high_mean":   "clip_ratio/high_mean",
	"lr":                     "learning_rate",
}

// MetricName is the name a metric is written under: TRL's where TRL has the quantity.
func MetricName(k string) string {
	if n, ok := TRLNames[k]; ok {
		return n
	}
	return k
}

// WriteMetrics writes one JSON object for the step to metrics (every metric under MetricName,
// sorted, plus action, reason and timings) and each warning as a warn-level line to log.
func WriteMetrics(metrics, log zerolog.Logger, kind string, rep *StepReport) {
	ev := metrics.Log().Str("kind", kind).Int("step", rep.Step).Str("action", string(rep.Action))
	if rep.Reason != "" {
		ev = ev.Str("reason", rep.Reason)
	}
	names := make(map[string]string, len(rep.Metrics))
	for k := range rep.Metrics {
		if k != "step" {
			names[MetricName(k)] = k
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		ev = ev.Float64(n, rep.Metrics[names[n]])
	}
	ev = ev.Float64("step_seconds", rep.Seconds).Float64("rollout_seconds", rep.RolloutSeconds)
	if rep.EnvSeconds > 0 {
		ev = ev.Float64("env/seconds", rep.EnvSeconds).Float64("env/wait_seconds", rep.EnvWaitSeconds)
	}
	ev.Msg("")
	for _, w := range rep.Warnings {
		log.Warn().Int("step", rep.Step).Msg(w)
	}
}

// Summary accumulates step metrics for the table printed at the end of a run.
type Summary struct {
	keys                  []string
	first, last, min, max map[string]float64
	sum                   map[string]float64
	n                     map[string]int
	steps                 int
	actions               map[Action]int
}

// DefaultSummaryKeys are the metrics a run's summary shows when present.
var DefaultSummaryKeys = []string{"reward_mean", "reward_std", "frac_reward_zero_std", "kl_mean", "kl_share", "entropy_mean",
	"completion_length_mean", "truncated_fraction", "active_fraction", "clip_ratio_region_mean", "ratio_p50", "advantage_std",
	"loss_token_fraction", "token_alignment", "logp_mismatch_max", "grad_norm", "vf_loss", "explained_variance", "vf_clipfrac"}

// NewSummary tracks keys (DefaultSummaryKeys when none).
func NewSummary(keys ...string) *Summary {
	if len(keys) == 0 {
		keys = DefaultSummaryKeys
	}
	return &Summary{keys: keys, first: map[string]float64{}, last: map[string]float64{}, min: map[string]float64{},
		max: map[string]float64{}, sum: map[string]float64{}, n: map[string]int{}, actions: map[Action]int{}}
}

// Add records a step.
func (s *Summary) Add(rep *StepReport) {
	s.steps++
	s.actions[rep.Action]++
	for _, k := range s.keys {
		v, ok := rep.Metrics[k]
		if !ok {
			continue
		}
		if s.n[k] == 0 {
			s.first[k], s.min[k], s.max[k] = v, v, v
		}
		s.last[k] = v
		s.min[k] = math.Min(s.min[k], v)
		s.max[k] = math.Max(s.max[k], v)
		s.sum[k] += v
		s.n[k]++
	}
}

// Table writes the summary: for each metric its first, last, mean, min and max over the run.
func (s *Summary) Table(w io.Writer) {
	fmt.Fprintf(w, "%-26s %11s %11s %11s %11s %11s\n", "metric", "first", "last", "mean", "min", "max")
	fmt.Fprintln(w, strings.Repeat("-", 26+5*12))
	for _, k := range s.keys {
		if s.n[k] == 0 {
			continue
		}
		fmt.Fprintf(w, "%-26s %11.4g %11.4g %11.4g %11.4g %11.4g\n", MetricName(k), s.first[k], s.last[k], s.sum[k]/float64(s.n[k]), s.min[k], s.max[k])
	}
	fmt.Fprintf(w, "steps %d: %d applied, %d skipped, %d stopped\n", s.steps, s.actions[Proceed], s.actions[Skip], s.actions[Stop])
	var notes []string
	for _, k := range s.keys {
		if note, ok := MetricNotes[k]; ok && s.n[k] > 0 {
			notes = append(notes, fmt.Sprintf("  %-24s %s", MetricName(k), note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "what vkgrad's own diagnostics say:")
		fmt.Fprintln(w, strings.Join(notes, "\n"))
	}
}

// MetricNotes explain, in a line each, the diagnostics vkgrad adds to the usual RL metrics.
var MetricNotes = map[string]string{
	"frac_reward_zero_std":   "share of groups whose completions all scored alike: no learning signal there",
	"kl_share":               "the KL term's share of the loss; near 1 the penalty, not the reward, drives the update",
	"truncated_fraction":     "share of completions cut at --max-new-tokens without an EOS",
	"active_fraction":        "share of tokens whose ratio is inside the clip range (low: the step is too large or log-probs are stale)",
	"clip_ratio_region_mean": "share of tokens clipped, low side or high",
	"ratio_p50":              "median policy/old probability ratio over the tokens; 1 on the first update of a batch",
	"advantage_std":          "spread of the advantages; 0 means every update is empty",
	"loss_token_fraction":    "share of response tokens the loss counts (forced template tokens are left out)",
	"token_alignment":        "share of trained tokens equal to the sampled ones; below 1 the loss trains on other tokens",
	"logp_mismatch_max":      "largest gap between sampling-time and training-time log-probs (float rounding when on-policy)",
	"explained_variance":     "how much of the returns' variance the value head explains (1 perfect, <= 0 no better than a constant)",
	"vf_clipfrac":            "share of tokens where the clipped value loss was the larger",
}

// summaryJSON is a Summary's saved form (for a checkpoint, so a resumed run's table covers the
// whole run).
type summaryJSON struct {
	Keys    []string           `json:"keys"`
	First   map[string]float64 `json:"first"`
	Last    map[string]float64 `json:"last"`
	Min     map[string]float64 `json:"min"`
	Max     map[string]float64 `json:"max"`
	Sum     map[string]float64 `json:"sum"`
	N       map[string]int     `json:"n"`
	Steps   int                `json:"steps"`
	Actions map[Action]int     `json:"actions"`
}

// MarshalJSON saves the summary's running statistics.
func (s *Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{Keys: s.keys, First: s.first, Last: s.last, Min: s.min, Max: s.max, Sum: s.sum, N: s.n,
		Steps: s.steps, Actions: s.actions})
}

// UnmarshalJSON restores a summary saved by MarshalJSON.
func (s *Summary) UnmarshalJSON(raw []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	r := NewSummary(j.Keys...)
	for dst, src := range map[*map[string]float64]map[string]float64{&r.first: j.First, &r.last: j.Last, &r.min: j.Min, &r.max: j.Max, &r.sum: j.Sum} {
		maps.Copy(*dst, src)
	}
	maps.Copy(r.n, j.N)
	maps.Copy(r.actions, j.Actions)
	r.steps = j.Steps
	*s = *r
	return nil
}
