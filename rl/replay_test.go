package rl

import (
	"math"
	"strings"
	"testing"
)

// replaySampling truncates hard on the toy model's 17-token vocabulary: top-k 5 then top-p 0.8.
var replaySampling = Sampling{Temperature: 0.9, TopK: 5, TopP: 0.8}

// With replay the training log-probs (policy and reference alike) are the log-probs of the
// truncated distribution each token was drawn from: they match the sampler's to float32
// rounding, while without replay they miss by the log of the kept mass.
func TestReplayTruncationMatchesSampler(t *testing.T) {
	var gap [2]float64
	for k, replay := range []bool{true, false} {
		tr := toyGRPO(t, func(c *GRPOTrainerConfig) {
			c.Train.Rollout.Sampling = replaySampling
			c.Train.ReplayTruncation = replay
			c.GRPO.Beta = 0.1
		})
		ro, _, err := tr.drawRollout(tr.Config.GRPO.GroupSize)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		sb, _, err := tr.batchFor(ro, m)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := sb.evalNoGrad(tr.pol, replaySampling.Temperature, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := sb.evalNoGrad(tr.refm, replaySampling.Temperature, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		V := tr.policy.VocabSize()
		truncated, tokens := 0, 0
		for i := range ro.Masks.Response {
			for j, w := range ro.Masks.Response[i] {
				if w == 0 {
					continue
				}
				tokens++
				if ro.Kept[i][j] < V {
					truncated++
				}
				if pol.Logp[i][j] != ref.Logp[i][j] {
					t.Fatalf("replay %v row %d pos %d: policy %v, reference %v", replay, i, j, pol.Logp[i][j], ref.Logp[i][j])
				}
				// The entropy of a distribution over Kept tokens is at most log(Kept).
				if replay && pol.Entropy[i][j] > math.Log(float64(ro.Kept[i][j]))+1e-6 {
					t.Fatalf("row %d pos %d: entropy %v over %d kept tokens", i, j, pol.Entropy[i][j], ro.Kept[i][j])
				}
			}
		}
		if truncated < tokens/2 {
			t.Fatalf("only %d of %d tokens were drawn from a truncated distribution", truncated, tokens)
		}
		mean, mx := LogpMismatch(ro.SampleTrunc, pol.Logp, ro.Masks.Response)
		gap[k] = mean
		t.Logf("replay %v: |training - sampling truncated log-prob| mean %.3g max %.3g over %d tokens (%d truncated)",
			replay, mean, mx, tokens, truncated)
		if replay && mx > 1e-5 {
			t.Fatalf("with replay the training log-probs miss the sampler's by up to %g", mx)
		}
		if !replay && mean < 0.1 {
			t.Fatalf("without replay the mean gap is only %g: the test does not truncate enough", mean)
		}
	}
	if gap[1] < 1e4*gap[0] {
		t.Fatalf("mean gap %g with replay, %g without", gap[0], gap[1])
	}
}

// A GRPO and a PPO step with replay: the reported mismatch is float32 rounding, the first
// inner iteration's ratio and the step-zero KL are exact, and no truncation note is given;
// without replay the note and the mismatch are there.
func TestReplayTruncationStep(t *testing.T) {
	for _, micro := range []int{0, 5} {
		tr := toyGRPO(t, func(c *GRPOTrainerConfig) {
			c.Train.Rollout.Sampling = replaySampling
			c.Train.MicroBatch = micro
			c.GRPO.Beta = 0.1
		})
		if len(tr.Notes()) != 0 {
			t.Fatalf("notes with replay: %q", tr.Notes())
		}
		rep, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Metrics
		t.Logf("GRPO micro-batch %d: logp_mismatch mean %.3g max %.3g, entropy_mean %.4f", micro, m["logp_mismatch_mean"], m["logp_mismatch_max"], m["entropy_mean"])
		if m["logp_mismatch_max"] > 1e-5 {
			t.Fatalf("logp_mismatch_max %v with replay", m["logp_mismatch_max"])
		}
		for _, k := range []string{"ratio_mean", "ratio_p10", "ratio_p90", "active_fraction"} {
			if m[k] != 1 {
				t.Errorf("%s = %v at the first inner iteration, want exactly 1", k, m[k])
			}
		}
		for _, k := range []string{"kl_mean", "kl_k3_mean", "clipped_fraction", "recompute_mismatch"} {
			if m[k] != 0 {
				t.Errorf("%s = %v, want exactly 0", k, m[k])
			}
		}
	}

	off := toyGRPO(t, func(c *GRPOTrainerConfig) {
		c.Train.Rollout.Sampling = replaySampling
		c.Train.ReplayTruncation = false
	})
	if len(off.Notes()) != 1 || !strings.Contains(off.Notes()[0], "replay_truncation is off") {
		t.Fatalf("notes without replay: %q", off.Notes())
	}
	rep, err := off.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GRPO without replay: logp_mismatch mean %.3g max %.3g, entropy_mean %.4f", rep.Metrics["logp_mismatch_mean"], rep.Metrics["logp_mismatch_max"], rep.Metrics["entropy_mean"])
	if rep.Metrics["logp_mismatch_mean"] < 0.1 {
		t.Fatalf("logp_mismatch_mean %v without replay", rep.Metrics["logp_mismatch_mean"])
	}

	ppo := toyPPO(t, func(c *PPOTrainerConfig) { c.Train.Rollout.Sampling = replaySampling })
	rep, err = ppo.TrainStep()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PPO: logp_mismatch max %.3g", rep.Metrics["logp_mismatch_max"])
	if v := rep.Metrics["logp_mismatch_max"]; v > 1e-5 {
		t.Fatalf("PPO logp_mismatch_max %v with replay", v)
	}
	if v := rep.Metrics["kl_ref_mean"]; v != 0 {
		t.Fatalf("PPO step-zero kl_ref_mean %v, want exactly 0", v)
	}
}
