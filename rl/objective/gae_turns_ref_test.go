package objective

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// gaeTurnsSource labels the case files in testdata: this project made them, from the reference
// below, not from an outside implementation.
const gaeTurnsSource = "made by vkgrad from its own float64 reference (gaeOverTurnsRef in rl/objective/gae_turns_ref_test.go): " +
	"each row's trained tokens compacted into a dense sequence, textbook GAE as the direct sum " +
	"A_t = sum_k (gamma*lam)^k delta_{t+k} with terminal value 0, scattered back; 0 off the trained mask"

// gaeOverTurnsRef is the independent reference for GAEOverTurns: compact, direct sum, scatter.
// It shares no code with the implementation (no recursion, no masks inside the sum).
func gaeOverTurnsRef(rewards, values, trained [][]float64, gamma, lam float64) (adv, ret [][]float64) {
	adv, ret = Zeros(len(rewards), cols(rewards)), Zeros(len(rewards), cols(rewards))
	for i := range rewards {
		var pos []int
		for t, m := range trained[i] {
			if m == 1 {
				pos = append(pos, t)
			}
		}
		L := len(pos)
		v := func(k int) float64 {
			if k >= L {
				return 0
			}
			return values[i][pos[k]]
		}
		for k := 0; k < L; k++ {
			var a float64
			for j := k; j < L; j++ {
				delta := rewards[i][pos[j]] + gamma*v(j+1) - v(j)
				a += math.Pow(gamma*lam, float64(j-k)) * delta
			}
			adv[i][pos[k]] = a
			ret[i][pos[k]] = a + v(k)
		}
	}
	return adv, ret
}

// episodeRow lays out one random multi-turn episode in T positions: turns of sampled tokens
// (trained, each with a small per-token penalty and the turn's reward on its last token),
// environment replies between them (untrained, arbitrary values), padding after the end.
func episodeRow(r *rng.RNG, T int) (rewards, values, trained []float64) {
	rewards, values, trained = make([]float64, T), make([]float64, T), make([]float64, T)
	for t := range values {
		values[t] = round3(r.Normal())
	}
	t := r.Intn(2) // sometimes an untrained token first
	for t < T {
		turn := 1 + r.Intn(4)
		if t+turn > T {
			turn = T - t
		}
		for k := t; k < t+turn; k++ {
			trained[k] = 1
			rewards[k] = round3(-0.05 * r.Float64())
		}
		rewards[t+turn-1] = round3(rewards[t+turn-1] + r.Normal())
		t += turn + 1 + r.Intn(3)
		if r.Float64() < 0.2 {
			break // episode done; the rest is padding
		}
	}
	return rewards, values, trained
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// gaeTurnsCaseInputs builds the case files' inputs: random episodes plus an untrained row and a
// row whose last turn is followed by an inserted boundary token.
func gaeTurnsCaseInputs(seed uint64) (rewards, values, trained [][]float64) {
	const n, T = 5, 14
	r := rng.New(seed)
	rewards, values, trained = Zeros(n, T), Zeros(n, T), Zeros(n, T)
	for i := 0; i < n-2; i++ {
		rewards[i], values[i], trained[i] = episodeRow(r, T)
	}
	for t := 0; t < T; t++ {
		values[n-2][t] = round3(r.Normal()) // untrained row (an episode that ended in env_error)
	}
	// Turn, reply, turn, reply, truncated turn then its inserted end-of-turn token, padding.
	copy(trained[n-1], []float64{1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0})
	copy(rewards[n-1], []float64{-0.01, -0.02, 0.5, 0, 0, -0.03, 0.25, 0, 0, 0, 0.01, 1, 0, 0})
	for t := 0; t < T; t++ {
		values[n-1][t] = round3(r.Normal())
	}
	return rewards, values, trained
}

var gaeTurnsCases = []struct {
	file       string
	seed       uint64
	gamma, lam float64
}{
	{"gae_turns_gamma1_lam095.json", 1, 1, 0.95},
	{"gae_turns_gamma097_lam09.json", 2, 0.97, 0.9},
	{"gae_turns_gamma09_lam0.json", 3, 0.9, 0},
}

// writeGAETurnsCase writes one case file from the reference.
func writeGAETurnsCase(t *testing.T, path string, seed uint64, gamma, lam float64) {
	rewards, values, trained := gaeTurnsCaseInputs(seed)
	adv, ret := gaeOverTurnsRef(rewards, values, trained, gamma, lam)
	c := map[string]any{
		"name": filepath.Base(path[:len(path)-len(".json")]), "kind": "gae_turns", "source": gaeTurnsSource,
		"config":    map[string]float64{"gamma": gamma, "lam": lam},
		"inputs":    map[string]any{"rewards": rewards, "values": values, "trained_mask": trained},
		"expected":  map[string]any{"advantages": adv, "returns": ret},
		"tolerance": map[string]float64{"abs": 1e-12, "rel": 1e-12},
	}
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGAEOverTurnsCases checks GAEOverTurns against the case files in testdata, and that each
// file is still what the reference makes of its inputs. VKGRAD_WRITE_GAE_TURNS=1 rewrites them.
func TestGAEOverTurnsCases(t *testing.T) {
	for _, tc := range gaeTurnsCases {
		path := filepath.Join("testdata", tc.file)
		if os.Getenv("VKGRAD_WRITE_GAE_TURNS") == "1" {
			writeGAETurnsCase(t, path, tc.seed, tc.gamma, tc.lam)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var c oracleCase
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if c.Kind != "gae_turns" || c.Source != gaeTurnsSource {
			t.Fatalf("%s: kind %q, source %q: want a gae_turns case labelled as this project's", path, c.Kind, c.Source)
		}
		for _, msg := range checkCase(c) {
			t.Errorf("%s: %s", path, msg)
		}
		var in struct {
			Rewards     [][]float64 `json:"rewards"`
			Values      [][]float64 `json:"values"`
			TrainedMask [][]float64 `json:"trained_mask"`
		}
		if err := json.Unmarshal(c.Inputs, &in); err != nil {
			t.Fatal(err)
		}
		var cfg struct{ Gamma, Lam float64 }
		if err := json.Unmarshal(c.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		adv, ret := gaeOverTurnsRef(in.Rewards, in.Values, in.TrainedMask, cfg.Gamma, cfg.Lam)
		for k, got := range map[string][][]float64{"advantages": adv, "returns": ret} {
			var want any
			if err := json.Unmarshal(c.Expected[k], &want); err != nil {
				t.Fatal(err)
			}
			for _, msg := range compareValue("reference "+k, want, got, 0, 0) {
				t.Errorf("%s: the file is not what the reference makes: %s", path, msg)
			}
		}
		// The case must tell the two functions apart: GAE, cut at each gap, fails it.
		cut, _, err := GAE(in.Rewards, in.Values, in.TrainedMask, cfg.Gamma, cfg.Lam)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(c.Expected["advantages"], &want); err != nil {
			t.Fatal(err)
		}
		if len(compareValue("gae", want, cut, c.Tolerance.Abs, c.Tolerance.Rel)) == 0 {
			t.Errorf("%s: GAE passes this case too; its gaps test nothing", path)
		}
	}
}
