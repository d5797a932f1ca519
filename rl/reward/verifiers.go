package reward

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vkgrad/vkgrad/rl"
)

// answerOf returns the reference answer from the metadata, or an error naming the field: an
// empty answer would make an empty completion right.
func answerOf(meta rl.Meta, field string) (string, error) {
	a, ok := meta[field]
	if !ok {
		return "", fmt.Errorf("the dataset line has no %q field", field)
	}
	if a == "" {
		return "", fmt.Errorf("the dataset line's %q field is empty", field)
	}
	return a, nil
}

// NeedsAnswer reports whether r compares completions with the reference answer (exact,
// numeric, a regex with {answer}), so every prompt it scores must have one.
func NeedsAnswer(r rl.Reward) bool {
	switch v := r.(type) {
	case Exact, Numeric:
		return true
	case *Regex:
		return v.plain == nil
	}
	return false
}

// Normalize is the form two answers are compared in: the EOS text removed, letters lowered,
// runs of white space made one space, surrounding space and a final period dropped.
func Normalize(s string) string {
	s = strings.TrimSuffix(s, rl.EOSText)
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	return strings.TrimSuffix(s, ".")
}

// Exact scores 1 when the completion equals the answer field after Normalize, else 0.
type Exact struct{ Field string }

// Name implements rl.Reward.
func (Exact) Name() string { return "exact" }

// Score implements rl.Reward.
func (e Exact) Score(_, completion string, meta rl.Meta) (float64, error) {
	want, err := answerOf(meta, e.Field)
	if err != nil {
		return 0, err
	}
	return bool01(Normalize(completion) == Normalize(want)), nil
}

// numberRE finds numbers written with optional thousands separators and decimals.
var numberRE = regexp.MustCompile(`-?\d[\d,]*(?:\.\d+)?|-?\.\d+`)

// FinalNumber extracts the answer number from a text: the number after the last "####" (the
// GSM8K form), else inside the last \boxed{...}, else the last number; commas, currency signs
// and units around it are ignored. ok is false when there is none.
func FinalNumber(s string) (float64, bool) {
	if i := strings.LastIndex(s, "####"); i >= 0 {
		s = s[i+4:]
		if m := numberRE.FindString(s); m != "" {
			return parseNumber(m)
		}
		return 0, false
	}
	if i := strings.LastIndex(s, `\boxed{`); i >= 0 {
		inner := s[i+len(`\boxed{`):]
		if j := strings.IndexByte(inner, '}'); j >= 0 {
			inner = inner[:j]
		}
		if m := numberRE.FindString(inner); m != "" {
			return parseNumber(m)
		}
	}
	all := numberRE.FindAllString(s, -1)
	if len(all) == 0 {
		return 0, false
	}
	return parseNumber(all[len(all)-1])
}

func parseNumber(m string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	return v, err == nil && !math.IsInf(v, 0)
}

// Numeric scores 1 when the completion's final number (FinalNumber) equals the answer's, to a
// relative 1e-6, else 0 (also when the completion has no number).
type Numeric struct{ Field string }

// Name implements rl.Reward.
func (Numeric) Name() string { return "numeric" }

// Score implements rl.Reward.
func (n Numeric) Score(_, completion string, meta rl.Meta) (float64, error) {
	a, err := answerOf(meta, n.Field)
	if err != nil {
		return 0, err
	}
	want, ok := FinalNumber(a)
	if !ok {
		return 0, fmt.Errorf("answer %q holds no number", a)
	}
	got, ok := FinalNumber(strings.TrimSuffix(completion, rl.EOSText))
	if !ok {
		return 0, nil
	}
	return bool01(math.Abs(got-want) <= 1e-6*max(1, math.Abs(want))), nil
}

// CheckAnswer refuses an answer with no number, which no completion could match.
func (Numeric) CheckAnswer(a string) error {
	if _, ok := FinalNumber(a); !ok {
		return fmt.Errorf("answer %q holds no number for the numeric reward", a)
	}
	return nil
}

// AnswerChecker is a verifier that can tell before training whether it can score against an
// answer, so a dataset is checked whole instead of failing at the step that draws a bad line.
type AnswerChecker interface {
	CheckAnswer(answer string) error
}

// Regex scores 1 when the completion contains a match of the pattern, else 0. "{answer}" in
// the pattern stands for the answer field, quoted, so "answer is {answer}" checks the answer.
type Regex struct {
	Pattern string
	Field   string
	plain   *regexp.Regexp // the pattern when it has no {answer}
}

// NewRegex compiles pattern (Go's RE2 syntax) for checking; field names the answer field.
func NewRegex(pattern, field string) (*Regex, error) {
	r := &Regex{Pattern: pattern, Field: field}
	probe := strings.ReplaceAll(pattern, "{answer}", "x")
	re, err := regexp.Compile(probe)
	if err != nil {
		return nil, fmt.Errorf("regex reward pattern %q: %w", pattern, err)
	}
	if probe == pattern {
		r.plain = re
	}
	return r, nil
}

// Name implements rl.Reward.
func (*Regex) Name() string { return "regex" }

// Score implements rl.Reward.
func (r *Regex) Score(_, completion string, meta rl.Meta) (float64, error) {
	re := r.plain
	if re == nil {
		a, err := answerOf(meta, r.Field)
		if err != nil {
			return 0, err
		}
		if re, err = regexp.Compile(strings.ReplaceAll(r.Pattern, "{answer}", regexp.QuoteMeta(a))); err != nil {
			return 0, fmt.Errorf("regex reward pattern %q with answer %q: %w", r.Pattern, a, err)
		}
	}
	return bool01(re.MatchString(strings.TrimSuffix(completion, rl.EOSText))), nil
}

// Format scores 1 when the whole completion, without the EOS text, matches the pattern.
type Format struct{ re *regexp.Regexp }

// NewFormat compiles pattern (Go's RE2 syntax), anchored at both ends.
func NewFormat(pattern string) (Format, error) {
	re, err := regexp.Compile(`\A(?:` + pattern + `)\z`)
	if err != nil {
		return Format{}, fmt.Errorf("format reward pattern %q: %w", pattern, err)
	}
	return Format{re}, nil
}

// Name implements rl.Reward.
func (Format) Name() string { return "format" }

// Score implements rl.Reward.
func (f Format) Score(_, completion string, _ rl.Meta) (float64, error) {
	return bool01(f.re.MatchString(strings.TrimSuffix(completion, rl.EOSText))), nil
}

// JSONFormat scores 1 when the completion holds a JSON object with every required key, else
// 0: the whole completion, or the text inside <tool_call>...</tool_call> or a ``` fence.
type JSONFormat struct{ Keys []string }

// Name implements rl.Reward.
func (JSONFormat) Name() string { return "format" }

// Score implements rl.Reward.
func (j JSONFormat) Score(_, completion string, _ rl.Meta) (float64, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(jsonPart(strings.TrimSuffix(completion, rl.EOSText))), &obj) != nil {
		return 0, nil
	}
	for _, k := range j.Keys {
		if _, ok := obj[k]; !ok {
			return 0, nil
		}
	}
	return 1, nil
}

// jsonPart cuts the JSON out of a completion that wraps it in a tool-call tag or a fence.
func jsonPart(s string) string {
	if _, after, ok := strings.Cut(s, "<tool_call>"); ok {
		s, _, _ = strings.Cut(after, "</tool_call>")
	} else if _, after, ok := strings.Cut(s, "```"); ok {
		after = strings.TrimPrefix(after, "json")
		s, _, _ = strings.Cut(after, "```")
	}
	return strings.TrimSpace(s)
}

// Length penalises completions longer than Target characters: 0 up to Target, then falling
// linearly to -1 at twice Target and staying there.
type Length struct{ Target int }

// Name implements rl.Reward.
func (Length) Name() string { return "length" }

// Score implements rl.Reward.
func (l Length) Score(_, completion string, _ rl.Meta) (float64, error) {
	if l.Target <= 0 {
		return 0, fmt.Errorf("length reward: target %d must be positive", l.Target)
	}
	n := utf8.RuneCountInString(strings.TrimSuffix(completion, rl.EOSText))
	return -min(1, float64(max(0, n-l.Target))/float64(l.Target)), nil
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
