package rl

import (
	"reflect"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
)

// TestRolloutSameForAnyGenBatch: a step's rollout (4 prompts of ragged lengths, 4 rows each,
// completions ending at different lengths) is bitwise the same whether all 16 rows decode
// together or 1, 2 or 3 at a time with continuous batching: each row draws from its own stream.
// Steps stay under 17 tokens, within one of the CPU matrix multiply's paths.
func TestRolloutSameForAnyGenBatch(t *testing.T) {
	pol := nn.GPT2(toyModel(t, 3))
	src := toyPrompts(false)
	var prompts []Prompt
	for range 4 {
		p, _ := src.Next()
		for range 4 {
			prompts = append(prompts, p)
		}
	}
	cfg := RolloutConfig{Sampling: Sampling{Temperature: 1.2, TopK: 9, TopP: 0.95}, MaxNewTokens: 8, EOS: toyEOS}
	var want *Rollout
	for _, gb := range []int{0, 1, 2, 3} {
		cfg.GenBatch = gb
		ro, err := Generate(pol, toy, prompts, cfg, rng.New(5))
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = ro
			lens := map[int]bool{}
			for _, n := range ro.GenLens {
				lens[n] = true
			}
			if len(lens) < 3 {
				t.Fatalf("completion lengths %v: the test wants ragged completions", ro.GenLens)
			}
			continue
		}
		for name, pair := range map[string][2]any{
			"completions": {want.Completions, ro.Completions}, "lengths": {want.GenLens, ro.GenLens},
			"log-probs": {want.SampleLogp, ro.SampleLogp}, "truncated log-probs": {want.SampleTrunc, ro.SampleTrunc},
			"kept": {want.Kept, ro.Kept}, "cutoffs": {want.Cutoff, ro.Cutoff}, "texts": {want.Texts, ro.Texts},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("gen_batch %d: %s differ from gen_batch 0's", gb, name)
			}
		}
	}
	// Another draw from the caller's stream gives another rollout.
	r := rng.New(5)
	r.Uint64()
	cfg.GenBatch = 0
	other, err := Generate(pol, toy, prompts, cfg, r)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(other.Completions, want.Completions) {
		t.Error("a different stream drew the same completions")
	}
}

// TestPromptGroupsAndStreams: runs of equal prompts are groups, and each row's stream is keyed
// by the group and its place in it.
func TestPromptGroupsAndStreams(t *testing.T) {
	ids := [][]int32{{1, 2}, {1, 2}, {3}, {3}, {3}, {1, 2}}
	groups := promptGroups(ids)
	if want := []int{0, 0, 1, 1, 1, 2}; !slices.Equal(groups, want) {
		t.Fatalf("groups %v, want %v", groups, want)
	}
	streams := rowStreams(groups, 9, 4)
	for i, k := range []int{0, 1, 0, 1, 2, 0} {
		if got, want := streams[i].Uint64(), rng.Keyed(9, 4, uint64(groups[i]), uint64(k)).Uint64(); got != want {
			t.Errorf("row %d: stream not keyed by (9, 4, group %d, %d)", i, groups[i], k)
		}
	}
}
