package objective

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The oracle harness must fail on a perturbed expected value, on an expected key the
// implementation does not produce, and on an unknown config option; otherwise a passing
// TestOracles would prove nothing.
func TestOracleHarnessCatchesMismatches(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(oracleDir(t), "grpo_basic.json"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(edit func(m map[string]any)) oracleCase {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		var c oracleCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if bad := checkCase(load(func(map[string]any) {})); len(bad) != 0 {
		t.Fatalf("unmodified case fails: %v", bad)
	}
	cases := []struct {
		edit func(m map[string]any)
		want string
	}{
		{func(m map[string]any) {
			d := m["expected"].(map[string]any)["diagnostics"].(map[string]any)
			d["ratio_p50"] = d["ratio_p50"].(float64) + 1e-4
		}, "expected.diagnostics.ratio_p50"},
		{func(m map[string]any) {
			m["expected"].(map[string]any)["diagnostics"].(map[string]any)["made_up_metric"] = 1.0
		}, "made_up_metric: not produced"},
		{func(m map[string]any) { m["expected"].(map[string]any)["made_up_array"] = []any{1.0} }, "made_up_array: not produced"},
		{func(m map[string]any) {
			g := m["expected"].(map[string]any)["grad_logp"].([]any)
			row := g[3].([]any)
			row[2] = row[2].(float64) * 1.001
		}, "expected.grad_logp[3][2]"},
		{func(m map[string]any) { m["config"].(map[string]any)["new_option"] = 1.0 }, "unknown field"},
		{func(m map[string]any) { m["kind"] = "dpo" }, `kind "dpo"`},
	}
	for _, c := range cases {
		bad := checkCase(load(c.edit))
		if len(bad) == 0 || !strings.Contains(strings.Join(bad, "\n"), c.want) {
			t.Errorf("mutation %q not caught: %v", c.want, bad)
		}
	}
}
