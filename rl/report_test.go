package rl

import (
	"strings"
	"testing"
)

// The summary explains the diagnostics it shows, and only those.
func TestSummaryExplainsItsDiagnostics(t *testing.T) {
	s := NewSummary()
	s.Add(&StepReport{Action: Proceed, Metrics: map[string]float64{"reward_mean": 0.5, "token_alignment": 1, "kl_share": 0.1}})
	var b strings.Builder
	s.Table(&b)
	out := b.String()
	for _, want := range []string{MetricNotes["token_alignment"], MetricNotes["kl_share"], "steps 1: 1 applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, MetricNotes["explained_variance"]) {
		t.Errorf("summary explains a metric it does not show:\n%s", out)
	}
	for _, k := range DefaultSummaryKeys {
		if _, ok := MetricNotes[k]; !ok && !strings.HasPrefix(k, "reward") && !strings.HasPrefix(k, "kl_mean") && k != "entropy_mean" &&
			k != "completion_length_mean" && k != "grad_norm" && k != "vf_loss" {
			t.Errorf("summary key %s is vkgrad's own but has no note", k)
		}
	}
}
