package objective

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// oracleCase is the schema shared by every file in the RL fixtures directory.
type oracleCase struct {
	Name      string                     `json:"name"`
	Kind      string                     `json:"kind"`
	Source    string                     `json:"source"` // who made the case, where not the fixtures' README
	Config    json.RawMessage            `json:"config"`
	Inputs    json.RawMessage            `json:"inputs"`
	Expected  map[string]json.RawMessage `json:"expected"`
	Tolerance struct {
		Abs float64 `json:"abs"`
		Rel float64 `json:"rel"`
	} `json:"tolerance"`
}

func oracleDir(t *testing.T) string {
	if d := os.Getenv("VKGRAD_RL_FIXTURES"); d != "" {
		return d
	}
	return filepath.Join(testutil.FixturesDir(t), "rl")
}

// TestOracles runs every *.json case in the fixtures directory against this package.
func TestOracles(t *testing.T) {
	dir := oracleDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no *.json oracle cases in %s", dir)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c oracleCase
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Name == "" {
			t.Fatalf("%s: case has no name", f)
		}
		t.Run(c.Name, func(t *testing.T) {
			for _, msg := range checkCase(c) {
				t.Errorf("%s: %s", filepath.Base(f), msg)
			}
		})
	}
}

// checkCase runs one case and returns every mismatch, including expected keys the
// implementation does not produce.
func checkCase(c oracleCase) []string {
	if c.Tolerance.Abs == 0 && c.Tolerance.Rel == 0 {
		return []string{"no tolerance given"}
	}
	if len(c.Expected) == 0 {
		return []string{"no expected values"}
	}
	got, err := runOracle(c)
	if err != nil {
		return []string{err.Error()}
	}
	keys := make([]string, 0, len(c.Expected))
	for k := range c.Expected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bad []string
	for _, k := range keys {
		var want any
		if err := json.Unmarshal(c.Expected[k], &want); err != nil {
			bad = append(bad, fmt.Sprintf("expected.%s: %v", k, err))
			continue
		}
		g, ok := got[k]
		if !ok {
			bad = append(bad, fmt.Sprintf("expected.%s: not produced by the implementation", k))
			continue
		}
		bad = append(bad, compareValue("expected."+k, want, g, c.Tolerance.Abs, c.Tolerance.Rel)...)
	}
	return bad
}

func decodeStrict(raw json.RawMessage, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func runOracle(c oracleCase) (map[string]any, error) {
	switch c.Kind {
	case "grpo":
		cfg := DefaultGRPOConfig()
		if err := decodeStrict(c.Config, &cfg, "config"); err != nil {
			return nil, err
		}
		var in struct {
			Rewards      []float64   `json:"rewards"`
			Logp         [][]float64 `json:"logp"`
			OldLogp      [][]float64 `json:"old_logp"`
			RefLogp      [][]float64 `json:"ref_logp"`
			ResponseMask [][]float64 `json:"response_mask"`
			LossMask     [][]float64 `json:"loss_mask"`
			Entropy      [][]float64 `json:"entropy"`
		}
		if err := decodeStrict(c.Inputs, &in, "inputs"); err != nil {
			return nil, err
		}
		r, err := GRPOLoss(cfg, GRPOInputs{Rewards: in.Rewards, Logp: in.Logp, OldLogp: in.OldLogp, RefLogp: in.RefLogp,
			ResponseMask: in.ResponseMask, LossMask: in.LossMask, Entropy: in.Entropy})
		if err != nil {
			return nil, err
		}
		if r.Action != Proceed {
			return nil, fmt.Errorf("step not applied: %s: %s", r.Action, r.Reason)
		}
		return map[string]any{
			"advantages": r.Advantages, "loss": r.Loss, "grad_logp": r.GradLogp,
			"grad_entropy": r.GradEntropy, "diagnostics": r.Diagnostics.Map(),
		}, nil
	case "ppo":
		cfg := DefaultPPOConfig()
		if err := decodeStrict(c.Config, &cfg, "config"); err != nil {
			return nil, err
		}
		var in struct {
			Scores       []float64   `json:"scores"`
			HasEOS       []float64   `json:"has_eos"`
			Logp         [][]float64 `json:"logp"`
			OldLogp      [][]float64 `json:"old_logp"`
			RefLogp      [][]float64 `json:"ref_logp"`
			Values       [][]float64 `json:"values"`
			OldValues    [][]float64 `json:"old_values"`
			ResponseMask [][]float64 `json:"response_mask"`
			LossMask     [][]float64 `json:"loss_mask"`
			Entropy      [][]float64 `json:"entropy"`
		}
		if err := decodeStrict(c.Inputs, &in, "inputs"); err != nil {
			return nil, err
		}
		eos := make([]bool, len(in.HasEOS))
		for i, v := range in.HasEOS {
			if v != 0 && v != 1 {
				return nil, fmt.Errorf("inputs.has_eos[%d] = %v: want 0 or 1", i, v)
			}
			eos[i] = v == 1
		}
		r, err := PPOLoss(cfg, PPOInputs{
			Scores: in.Scores, HasEOS: eos, Logp: in.Logp, OldLogp: in.OldLogp, RefLogp: in.RefLogp,
			Values: in.Values, OldValues: in.OldValues, ResponseMask: in.ResponseMask, LossMask: in.LossMask,
			Entropy: in.Entropy,
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{
			"token_rewards": r.TokenRewards, "advantages_raw": r.AdvantagesRaw, "advantages": r.Advantages,
			"returns": r.Returns, "pg_loss": r.PGLoss, "vf_loss": r.VFLoss, "loss": r.Loss,
			"grad_logp": r.GradLogp, "grad_values": r.GradValues, "grad_entropy": r.GradEntropy,
			"diagnostics": r.Diagnostics.Map(),
		}, nil
	case "gae":
		var cfg struct {
			Gamma float64 `json:"gamma"`
			Lam   float64 `json:"lam"`
		}
		if err := decodeStrict(c.Config, &cfg, "config"); err != nil {
			return nil, err
		}
		var in struct {
			Rewards      [][]float64 `json:"rewards"`
			Values       [][]float64 `json:"values"`
			ResponseMask [][]float64 `json:"response_mask"`
		}
		if err := decodeStrict(c.Inputs, &in, "inputs"); err != nil {
			return nil, err
		}
		adv, ret, err := GAE(in.Rewards, in.Values, in.ResponseMask, cfg.Gamma, cfg.Lam)
		if err != nil {
			return nil, err
		}
		return map[string]any{"advantages": adv, "returns": ret}, nil
	case "gae_turns":
		var cfg struct {
			Gamma float64 `json:"gamma"`
			Lam   float64 `json:"lam"`
		}
		if err := decodeStrict(c.Config, &cfg, "config"); err != nil {
			return nil, err
		}
		var in struct {
			Rewards     [][]float64 `json:"rewards"`
			Values      [][]float64 `json:"values"`
			TrainedMask [][]float64 `json:"trained_mask"`
		}
		if err := decodeStrict(c.Inputs, &in, "inputs"); err != nil {
			return nil, err
		}
		adv, ret, err := GAEOverTurns(in.Rewards, in.Values, in.TrainedMask, cfg.Gamma, cfg.Lam)
		if err != nil {
			return nil, err
		}
		return map[string]any{"advantages": adv, "returns": ret}, nil
	case "logprobs":
		var cfg Sampling
		if err := decodeStrict(c.Config, &cfg, "config"); err != nil {
			return nil, err
		}
		var in struct {
			Logits [][]float64 `json:"logits"`
			Tokens []int       `json:"tokens"`
		}
		if err := decodeStrict(c.Inputs, &in, "inputs"); err != nil {
			return nil, err
		}
		r, err := ComputeTokenLogProbs(in.Logits, in.Tokens, cfg)
		if err != nil {
			return nil, err
		}
		return map[string]any{"logprobs": r.LogProbs, "truncated_logprobs": r.Truncated, "entropy": r.Entropy}, nil
	}
	return nil, fmt.Errorf("kind %q: want grpo, ppo, logprobs, gae or gae_turns", c.Kind)
}

// compareValue walks an expected JSON value (number, null, array, object) against what the
// implementation produced and returns one line per mismatch. null expects NaN (a value that
// does not exist, e.g. a token outside the truncated set).
func compareValue(path string, want, got any, abs, rel float64) []string {
	var bad []string
	switch w := want.(type) {
	case nil:
		g, ok := toFloat(got)
		if !ok || !math.IsNaN(g) {
			bad = append(bad, fmt.Sprintf("%s: got %v, want null (absent)", path, got))
		}
	case float64:
		g, ok := toFloat(got)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want a number", path, got)}
		}
		if math.IsNaN(g) || math.Abs(g-w) > abs+rel*math.Abs(w) {
			bad = append(bad, fmt.Sprintf("%s: got %.12g, want %.12g (|diff| %.3g)", path, g, w, math.Abs(g-w)))
		}
	case []any:
		gs, ok := toSlice(got)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want an array", path, got)}
		}
		if len(gs) != len(w) {
			return []string{fmt.Sprintf("%s: got %d elements, want %d", path, len(gs), len(w))}
		}
		for i := range w {
			bad = append(bad, compareValue(fmt.Sprintf("%s[%d]", path, i), w[i], gs[i], abs, rel)...)
		}
	case map[string]any:
		gm, ok := got.(map[string]float64)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want an object", path, got)}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g, ok := gm[k]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s.%s: not produced by the implementation", path, k))
				continue
			}
			bad = append(bad, compareValue(path+"."+k, w[k], g, abs, rel)...)
		}
	default:
		bad = append(bad, fmt.Sprintf("%s: unsupported expected value %T", path, want))
	}
	return bad
}

func toFloat(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func toSlice(v any) ([]any, bool) {
	switch s := v.(type) {
	case []float64:
		out := make([]any, len(s))
		for i, x := range s {
			out[i] = x
		}
		return out, true
	case [][]float64:
		out := make([]any, len(s))
		for i, x := range s {
			out[i] = x
		}
		return out, true
	}
	return nil, false
}
