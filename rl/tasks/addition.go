package tasks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl"
)

// AdditionConfig configures the addition task. Each field becomes a command-line flag.
type AdditionConfig struct {
	// MinDigits and MaxDigits bound the number of digits of each operand; 1 <= min <= max <= 9.
	MinDigits int `json:"min_digits"`
	MaxDigits int `json:"max_digits"`
	// Spaced separates digits with spaces ("1 2 + 3 4 5 =" -> " 3 5 7"). GPT-2's BPE merges
	// runs of digits into multi-digit tokens with no consistent alignment, which makes
	// arithmetic very hard for a tiny model; with spaces every digit is one token (" 0".." 9").
	Spaced bool `json:"spaced"`
	// ReversedAnswer writes the sum least-significant digit first ("1 2 + 3 4 5 =" -> " 7 5 3"),
	// the order in which a left-to-right model can compute carries; much easier to learn.
	ReversedAnswer bool `json:"reversed_answer"`
	// HeldOutFraction of the (a, b) problems form the test split, chosen by a hash of the
	// problem; in [0, 1).
	HeldOutFraction float64 `json:"held_out_fraction"`
	// PartialCredit scores well-formed wrong answers (see AdditionReward) instead of 0.
	PartialCredit bool `json:"partial_credit"`
}

// DefaultAdditionConfig is 1- to 3-digit operands, spaced digits, 10% held out.
func DefaultAdditionConfig() AdditionConfig {
	return AdditionConfig{MinDigits: 1, MaxDigits: 3, Spaced: true, HeldOutFraction: 0.1}
}

// Validate names the first bad field.
func (c AdditionConfig) Validate() error {
	if c.MinDigits < 1 || c.MinDigits > 9 {
		return fmt.Errorf("min_digits %d: want 1..9", c.MinDigits)
	}
	if c.MaxDigits < c.MinDigits || c.MaxDigits > 9 {
		return fmt.Errorf("max_digits %d: want min_digits (%d)..9", c.MaxDigits, c.MinDigits)
	}
	if !(c.HeldOutFraction >= 0 && c.HeldOutFraction < 1) {
		return fmt.Errorf("held_out_fraction %v: want a value in [0, 1)", c.HeldOutFraction)
	}
	return nil
}

// Addition is the task "a+b=" with answer a+b in decimal, then EOS.
type Addition struct{ cfg AdditionConfig }

// NewAddition validates cfg.
func NewAddition(cfg AdditionConfig) (*Addition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("addition task: %w", err)
	}
	return &Addition{cfg: cfg}, nil
}

// Name implements Task.
func (a *Addition) Name() string { return "addition" }

// Format renders a problem: its prompt and its answer pieces (one per digit when spaced).
func (a *Addition) Format(x, y int64) Prompt {
	sumText := strconv.FormatInt(x+y, 10)
	if a.cfg.ReversedAnswer {
		b := []byte(sumText)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		sumText = string(b)
	}
	var text, answer string
	var pieces []Piece
	if a.cfg.Spaced {
		text = spaceDigits(strconv.FormatInt(x, 10)) + " + " + spaceDigits(strconv.FormatInt(y, 10)) + " ="
		for _, d := range sumText {
			pieces = append(pieces, Piece{Text: " " + string(d)})
		}
		answer = " " + spaceDigits(sumText)
	} else {
		text = fmt.Sprintf("%d+%d=", x, y)
		answer = sumText
		pieces = []Piece{{Text: answer}}
	}
	return Prompt{
		Task: a.Name(), Text: text, Answer: answer, Format: pieces,
		Meta: rl.Meta{"task": a.Name(), "answer": answer, "a": strconv.FormatInt(x, 10), "b": strconv.FormatInt(y, 10)},
	}
}

// Sample implements Task.
func (a *Addition) Sample(r *rng.RNG, split Split) (Prompt, error) {
	if err := split.validate(); err != nil {
		return Prompt{}, err
	}
	for try := 0; try < 10000; try++ {
		x := randomDigits(r, a.cfg.MinDigits+r.Intn(a.cfg.MaxDigits-a.cfg.MinDigits+1))
		y := randomDigits(r, a.cfg.MinDigits+r.Intn(a.cfg.MaxDigits-a.cfg.MinDigits+1))
		if inTest(uint64(x)*1_000_000_007^uint64(y), a.cfg.HeldOutFraction) == (split == Test) {
			return a.Format(x, y), nil
		}
	}
	return Prompt{}, fmt.Errorf("addition task: no %s problem found (held_out_fraction %v)", split, a.cfg.HeldOutFraction)
}

// Reward implements Task.
func (a *Addition) Reward() rl.Reward {
	return AdditionReward{Spaced: a.cfg.Spaced, Reversed: a.cfg.ReversedAnswer, PartialCredit: a.cfg.PartialCredit}
}

// AdditionReward scores 1 for exactly the reference answer followed by EOS (no extra spaces,
// no leading zeros, nothing after). With PartialCredit, a completion that is well formed
// (digits in the task's format) but wrong or missing its EOS scores
//
//	0.1 + 0.4 * (digits equal to the reference, aligned from the units digit) / max(len)
//
// at most 0.5, so an exact answer always beats any partial one; anything else scores 0.
type AdditionReward struct {
	Spaced        bool
	Reversed      bool // answers are written units digit first
	PartialCredit bool
}

// Name implements rl.Reward.
func (AdditionReward) Name() string { return "addition" }

// Score implements rl.Reward.
func (ar AdditionReward) Score(_, completion string, meta rl.Meta) (float64, error) {
	return digitScore(completion, meta, ar.PartialCredit, func(s string) (string, bool) {
		return parseItems(s, ar.Spaced, func(c byte) bool { return c >= '0' && c <= '9' })
	}, !ar.Reversed)
}

// digitScore implements exact-match scoring with optional partial credit shared by the
// built-in tasks; alignRight compares items from the end (the units digit of a number
// written most-significant first).
func digitScore(completion string, meta rl.Meta, partial bool, parse func(string) (string, bool), alignRight bool) (float64, error) {
	want, ok := meta["answer"]
	if !ok {
		return 0, fmt.Errorf("metadata has no \"answer\" field")
	}
	if completion == want+rl.EOSText {
		return 1, nil
	}
	if !partial {
		return 0, nil
	}
	body, _ := strings.CutSuffix(completion, rl.EOSText)
	got, ok := parse(body)
	if !ok {
		return 0, nil
	}
	ref, ok := parse(want)
	if !ok {
		return 0, fmt.Errorf("reference answer %q is not in the task's format", want)
	}
	n := max(len(got), len(ref))
	same := 0
	for i := 0; i < min(len(got), len(ref)); i++ {
		gi, ri := i, i
		if alignRight {
			gi, ri = len(got)-1-i, len(ref)-1-i
		}
		if got[gi] == ref[ri] {
			same++
		}
	}
	return 0.1 + 0.4*float64(same)/float64(n), nil
}

// parseItems returns the items of a well-formed answer: " x y z" when spaced, "xyz" otherwise,
// each item one byte accepted by ok.
func parseItems(s string, spaced bool, ok func(byte) bool) (string, bool) {
	if s == "" {
		return "", false
	}
	if !spaced {
		for i := 0; i < len(s); i++ {
			if !ok(s[i]) {
				return "", false
			}
		}
		return s, true
	}
	if len(s)%2 != 0 {
		return "", false
	}
	items := make([]byte, 0, len(s)/2)
	for i := 0; i < len(s); i += 2 {
		if s[i] != ' ' || !ok(s[i+1]) {
			return "", false
		}
		items = append(items, s[i+1])
	}
	return string(items), true
}

func spaceDigits(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// randomDigits draws a uniform number with exactly d digits (0..9 for d = 1).
func randomDigits(r *rng.RNG, d int) int64 {
	if d == 1 {
		return int64(r.Intn(10))
	}
	lo := int64(1)
	for i := 1; i < d; i++ {
		lo *= 10
	}
	return lo + int64(r.Intn(int(9*lo)))
}

// inTest places a problem key in the held-out split by a hash, independent of any seed, so
// every run agrees on which problems are held out.
func inTest(key uint64, frac float64) bool {
	z := key + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)*(1.0/(1<<53)) < frac
}
