package tasks

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl"
)

// CopyConfig configures the copy/reverse task, an easier companion to addition for mixtures
// and quick tests. Each field becomes a command-line flag.
type CopyConfig struct {
	// MinLen and MaxLen bound the number of letters; 1 <= min <= max <= 32.
	MinLen int `json:"min_len"`
	MaxLen int `json:"max_len"`
	// Alphabet is the set of lower-case ASCII letters drawn from (each " x" is one GPT-2 token).
	Alphabet string `json:"alphabet"`
	// Reverse asks for the letters in reverse order instead of a copy.
	Reverse bool `json:"reverse"`
	// EndMarker is a fixed piece the format puts after the letters (e.g. " ."); it is a forced
	// token in the template. Empty for none.
	EndMarker string `json:"end_marker"`
	// HeldOutFraction of the strings form the test split; in [0, 1).
	HeldOutFraction float64 `json:"held_out_fraction"`
	// PartialCredit scores well-formed wrong answers as 0.1 + 0.4 * (letters in the right
	// position) / max(len), at most 0.5.
	PartialCredit bool `json:"partial_credit"`
}

// DefaultCopyConfig copies 2 to 5 letters of a-j, ending with " .".
func DefaultCopyConfig() CopyConfig {
	return CopyConfig{MinLen: 2, MaxLen: 5, Alphabet: "abcdefghij", EndMarker: " .", HeldOutFraction: 0.1}
}

// Validate names the first bad field.
func (c CopyConfig) Validate() error {
	if c.MinLen < 1 || c.MinLen > 32 {
		return fmt.Errorf("min_len %d: want 1..32", c.MinLen)
	}
	if c.MaxLen < c.MinLen || c.MaxLen > 32 {
		return fmt.Errorf("max_len %d: want min_len (%d)..32", c.MaxLen, c.MinLen)
	}
	if c.Alphabet == "" {
		return fmt.Errorf("alphabet: empty")
	}
	for i := 0; i < len(c.Alphabet); i++ {
		ch := c.Alphabet[i]
		if ch < 'a' || ch > 'z' || strings.IndexByte(c.Alphabet[:i], ch) >= 0 {
			return fmt.Errorf("alphabet %q: want distinct letters a-z, got %q at %d", c.Alphabet, ch, i)
		}
	}
	if c.EndMarker != "" && strings.TrimSpace(c.EndMarker) == "" {
		return fmt.Errorf("end_marker %q: want visible text or empty", c.EndMarker)
	}
	if !(c.HeldOutFraction >= 0 && c.HeldOutFraction < 1) {
		return fmt.Errorf("held_out_fraction %v: want a value in [0, 1)", c.HeldOutFraction)
	}
	return nil
}

// Copy is the task "copy: a b c =" -> " a b c ." (or reversed, "reverse: ...").
type Copy struct{ cfg CopyConfig }

// NewCopy validates cfg.
func NewCopy(cfg CopyConfig) (*Copy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("copy task: %w", err)
	}
	return &Copy{cfg: cfg}, nil
}

// Name implements Task.
func (c *Copy) Name() string {
	if c.cfg.Reverse {
		return "reverse"
	}
	return "copy"
}

// Format renders the problem for letters s.
func (c *Copy) Format(s string) Prompt {
	out := s
	if c.cfg.Reverse {
		b := []byte(s)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		out = string(b)
	}
	var pieces []Piece
	for i := 0; i < len(out); i++ {
		pieces = append(pieces, Piece{Text: " " + out[i:i+1]})
	}
	answer := " " + spaceDigits(out)
	if c.cfg.EndMarker != "" {
		pieces = append(pieces, Piece{Text: c.cfg.EndMarker, Fixed: true})
		answer += c.cfg.EndMarker
	}
	return Prompt{
		Task: c.Name(), Text: c.Name() + ": " + spaceDigits(s) + " =", Answer: answer, Format: pieces,
		Meta: rl.Meta{"task": c.Name(), "answer": answer, "input": s},
	}
}

// Sample implements Task.
func (c *Copy) Sample(r *rng.RNG, split Split) (Prompt, error) {
	if err := split.validate(); err != nil {
		return Prompt{}, err
	}
	for try := 0; try < 10000; try++ {
		n := c.cfg.MinLen + r.Intn(c.cfg.MaxLen-c.cfg.MinLen+1)
		b := make([]byte, n)
		for i := range b {
			b[i] = c.cfg.Alphabet[r.Intn(len(c.cfg.Alphabet))]
		}
		h := fnv.New64a()
		h.Write(b)
		if inTest(h.Sum64(), c.cfg.HeldOutFraction) == (split == Test) {
			return c.Format(string(b)), nil
		}
	}
	return Prompt{}, fmt.Errorf("%s task: no %s problem found (held_out_fraction %v)", c.Name(), split, c.cfg.HeldOutFraction)
}

// Reward implements Task.
func (c *Copy) Reward() rl.Reward {
	return CopyReward{EndMarker: c.cfg.EndMarker, PartialCredit: c.cfg.PartialCredit}
}

// CopyReward scores 1 for exactly the reference answer followed by EOS; with PartialCredit,
// see CopyConfig.PartialCredit.
type CopyReward struct {
	EndMarker     string
	PartialCredit bool
}

// Name implements rl.Reward.
func (CopyReward) Name() string { return "copy" }

// Score implements rl.Reward.
func (cr CopyReward) Score(_, completion string, meta rl.Meta) (float64, error) {
	return digitScore(completion, meta, cr.PartialCredit, func(s string) (string, bool) {
		body, ok := strings.CutSuffix(s, cr.EndMarker)
		if !ok {
			return "", false
		}
		return parseItems(body, true, func(c byte) bool { return c >= 'a' && c <= 'z' })
	}, false)
}
