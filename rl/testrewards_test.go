package rl

import (
	"fmt"
	"regexp"
	"strings"
)

// The rewards below serve the tests of the trainers; the verifiers a run uses are rl/reward's.

// exactMatch scores 1 when the completion equals meta[Field] followed by EOSText (when
// RequireEOS), else 0. With TrimSpace, surrounding whitespace of the answer part is ignored.
type exactMatch struct {
	Field      string // metadata key of the reference answer, e.g. "answer"
	RequireEOS bool
	TrimSpace  bool
}

// Name implements Reward.
func (e exactMatch) Name() string { return "exact_match" }

// Score implements Reward.
func (e exactMatch) Score(_, completion string, meta Meta) (float64, error) {
	want, ok := meta[e.Field]
	if !ok {
		return 0, fmt.Errorf("metadata has no %q field", e.Field)
	}
	got, hadEOS := strings.CutSuffix(completion, EOSText)
	if e.RequireEOS && !hadEOS {
		return 0, nil
	}
	if e.TrimSpace {
		got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	}
	if got == want {
		return 1, nil
	}
	return 0, nil
}

// formatRegexp scores 1 when the whole completion matches Pattern, else 0.
type formatRegexp struct {
	Pattern *regexp.Regexp
}

// newFormatRegexp compiles pattern, anchored at both ends.
func newFormatRegexp(pattern string) (formatRegexp, error) {
	re, err := regexp.Compile(`\A(?:` + pattern + `)\z`)
	if err != nil {
		return formatRegexp{}, fmt.Errorf("format reward pattern %q: %w", pattern, err)
	}
	return formatRegexp{Pattern: re}, nil
}

// Name implements Reward.
func (f formatRegexp) Name() string { return "format" }

// Score implements Reward.
func (f formatRegexp) Score(_, completion string, _ Meta) (float64, error) {
	if f.Pattern == nil {
		return 0, fmt.Errorf("no pattern")
	}
	if f.Pattern.MatchString(completion) {
		return 1, nil
	}
	return 0, nil
}

// eosBonus scores 1 when the completion ended with an EOS (it stopped on its own rather than
// running into the length limit), else 0.
type eosBonus struct{}

// Name implements Reward.
func (eosBonus) Name() string { return "eos" }

// Score implements Reward.
func (eosBonus) Score(_, completion string, _ Meta) (float64, error) {
	if strings.HasSuffix(completion, EOSText) {
		return 1, nil
	}
	return 0, nil
}
