package objective

import (
	"fmt"
	"math"
)

// Masks describes which completion positions count. Rows are right-padded completions (the
// prompt is not included); columns are completion positions.
type Masks struct {
	// Response is 1 from the first completion token up to and including the first EOS (or up to
	// the row's generated length when there is none), 0 on the right padding.
	Response [][]float64
	// Loss is Response minus forced tokens: the positions that carry a learning signal.
	Loss [][]float64
	// Truncated is true for rows that stopped at the length limit without an EOS.
	Truncated []bool
	// Lengths is the number of response tokens per row (EOS included).
	Lengths []int
	// ForcedTokens counts response tokens removed from the loss mask as forced.
	ForcedTokens int
}

// Forced decides which response tokens of one row were dictated by a template or schema rather
// than chosen by the policy. It returns one flag per position of resp (the row's response
// tokens, EOS included when present).
type Forced interface {
	Forced(row int, resp []int) ([]bool, error)
}

// ForcedFunc adapts a function to Forced.
type ForcedFunc func(row int, resp []int) ([]bool, error)

// Forced calls f.
func (f ForcedFunc) Forced(row int, resp []int) ([]bool, error) { return f(row, resp) }

// ForcedTokenSet marks every response token whose id is in the set. Because GPT-2's EOS and PAD
// share an id, only response positions are ever consulted: padding is excluded by position
// before the set is looked at.
type ForcedTokenSet map[int]bool

// Forced implements Forced.
func (s ForcedTokenSet) Forced(_ int, resp []int) ([]bool, error) {
	f := make([]bool, len(resp))
	for i, tok := range resp {
		f[i] = s[tok]
	}
	return f, nil
}

// Unforced marks a template position whose token the policy chooses.
const Unforced = -1

// ForcedTemplate holds, per row, the token each completion position must hold by the task's
// format, or Unforced. A position is forced only when the sampled token equals the template's:
// a policy that deviates from the format made a choice, and that choice is learned from.
// A template shorter than the response leaves the remaining positions free.
type ForcedTemplate [][]int

// Forced implements Forced.
func (tp ForcedTemplate) Forced(row int, resp []int) ([]bool, error) {
	if row >= len(tp) {
		return nil, fmt.Errorf("forced template: no template for row %d (%d templates)", row, len(tp))
	}
	tmpl := tp[row]
	f := make([]bool, len(resp))
	for i, tok := range resp {
		if i < len(tmpl) && tmpl[i] != Unforced && tmpl[i] == tok {
			f[i] = true
		}
	}
	return f, nil
}

// BuildMasks computes masks for right-padded completions. genLens[i] is the number of tokens
// the sampler generated for row i (nil means every row ran to the full width); positions at or
// beyond it are padding whatever their id. eos is the end-of-sequence id. forced may be nil.
//
// Masks are by position, never by token value: with EOS == PAD (GPT-2's 50256) masking by
// value would drop the EOS the policy chose, or keep padding that happens to hold the id.
func BuildMasks(completions [][]int, genLens []int, eos int, forced Forced) (*Masks, error) {
	rows := len(completions)
	width := 0
	for _, c := range completions {
		if len(c) > width {
			width = len(c)
		}
	}
	if genLens != nil && len(genLens) != rows {
		return nil, fmt.Errorf("generated lengths: %d values for %d rows", len(genLens), rows)
	}
	m := &Masks{
		Response:  Zeros(rows, width),
		Loss:      Zeros(rows, width),
		Truncated: make([]bool, rows),
		Lengths:   make([]int, rows),
	}
	for i, c := range completions {
		n := len(c)
		if genLens != nil {
			if genLens[i] < 0 || genLens[i] > len(c) {
				return nil, fmt.Errorf("generated lengths[%d] = %d: want 0..%d (the row's width)", i, genLens[i], len(c))
			}
			n = genLens[i]
		}
		end := n
		m.Truncated[i] = true
		for t := 0; t < n; t++ {
			if c[t] == eos {
				end = t + 1
				m.Truncated[i] = false
				break
			}
		}
		m.Lengths[i] = end
		var f []bool
		if forced != nil {
			var err error
			f, err = forced.Forced(i, c[:end])
			if err != nil {
				return nil, fmt.Errorf("forced tokens, row %d: %w", i, err)
			}
			if len(f) != end {
				return nil, fmt.Errorf("forced tokens, row %d: %d flags for %d response tokens", i, len(f), end)
			}
		}
		for t := 0; t < end; t++ {
			m.Response[i][t] = 1
			if f != nil && f[t] {
				m.ForcedTokens++
				continue
			}
			m.Loss[i][t] = 1
		}
	}
	return m, nil
}

// TokenAlignment returns the fraction of masked positions where the tokens used for training
// equal the tokens the sampler produced. Anything below 1 means an off-by-one or a
// re-tokenisation mismatch: ratios computed on misaligned tokens are meaningless.
func TokenAlignment(rollout, train [][]int, mask [][]float64) (float64, error) {
	if len(rollout) != len(train) || len(rollout) != len(mask) {
		return 0, fmt.Errorf("token alignment: %d rollout rows, %d training rows, %d mask rows", len(rollout), len(train), len(mask))
	}
	match, n := 0, 0
	for i := range rollout {
		if len(rollout[i]) != len(mask[i]) || len(train[i]) != len(mask[i]) {
			return 0, fmt.Errorf("token alignment, row %d: %d rollout tokens, %d training tokens, %d mask positions", i, len(rollout[i]), len(train[i]), len(mask[i]))
		}
		for t := range mask[i] {
			if mask[i][t] == 0 {
				continue
			}
			n++
			if rollout[i][t] == train[i][t] {
				match++
			}
		}
	}
	if n == 0 {
		return 1, nil
	}
	return float64(match) / float64(n), nil
}

// LengthStats summarises completion lengths for the step's diagnostics.
type LengthStats struct {
	Mean              float64 `json:"completion_length_mean"`
	Min               float64 `json:"completion_length_min"`
	Max               float64 `json:"completion_length_max"`
	TruncatedFraction float64 `json:"truncated_fraction"` // rows without an EOS
	ForcedFraction    float64 `json:"forced_fraction"`    // forced tokens / response tokens
}

// Map returns the statistics keyed by their JSON names.
func (s LengthStats) Map() map[string]float64 { return structMap(s) }

// Stats returns the masks' length statistics (zeros for an empty batch).
func (m *Masks) Stats() LengthStats {
	var s LengthStats
	if len(m.Lengths) == 0 {
		return s
	}
	s.Min = float64(m.Lengths[0])
	total := 0
	for i, l := range m.Lengths {
		total += l
		s.Min = min(s.Min, float64(l))
		s.Max = max(s.Max, float64(l))
		if m.Truncated[i] {
			s.TruncatedFraction++
		}
	}
	s.Mean = float64(total) / float64(len(m.Lengths))
	s.TruncatedFraction /= float64(len(m.Lengths))
	if total > 0 {
		s.ForcedFraction = float64(m.ForcedTokens) / float64(total)
	}
	return s
}

// DropNonFinite removes from mask the positions where logp is NaN or infinite (a token outside
// the truncated top-k/top-p set, for instance), sets logp there to 0 so the arrays pass the
// losses' input checks, and returns how many masked positions were dropped. Positions off the
// mask are cleaned too but not counted.
func DropNonFinite(logp, mask [][]float64) (int, error) {
	if err := checkMask("mask", mask, len(logp), cols(logp)); err != nil {
		return 0, err
	}
	n := 0
	for i := range logp {
		if len(logp[i]) != len(mask[i]) {
			return 0, fmt.Errorf("logp: row %d has %d tokens, mask %d", i, len(logp[i]), len(mask[i]))
		}
		for t, v := range logp[i] {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				continue
			}
			logp[i][t] = 0
			if mask[i][t] != 0 {
				mask[i][t] = 0
				n++
			}
		}
	}
	return n, nil
}

// checkMasks checks a loss's two masks: each n x T of 0s and 1s, the loss mask inside the
// response mask.
func checkMasks(response, loss [][]float64, n, T int) error {
	if err := checkMask("response_mask", response, n, T); err != nil {
		return err
	}
	if err := checkMask("loss_mask", loss, n, T); err != nil {
		return err
	}
	return checkSubmask("loss_mask", loss, "response_mask", response)
}
