package reward

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/rl"
)

// Options are the settings of the named verifiers; the CLI fills them from its flags, whose
// names the errors use.
type Options struct {
	AnswerField  string   // dataset field holding the reference answer (--answer-field, default "answer")
	Regex        string   // pattern of "regex" (--reward-regex)
	FormatRegex  string   // "format": the whole completion matches this (--format-regex)
	JSONKeys     []string // "format": the completion is a JSON object with these keys (--format-json-keys)
	TargetLength int      // "length": characters allowed before the penalty (--target-length)
}

// Names lists the verifiers Parse knows.
var Names = []string{"exact", "numeric", "regex", "format", "length"}

// Parse reads a reward spec, "name:weight,name:weight,..." (a missing weight is 1), into
// weighted verifiers, e.g. "numeric:1,format:0.2".
func Parse(spec string, o Options) ([]rl.Weighted, error) {
	if o.AnswerField == "" {
		o.AnswerField = "answer"
	}
	var out []rl.Weighted
	for _, term := range strings.Split(spec, ",") {
		name, w, hasW := strings.Cut(strings.TrimSpace(term), ":")
		weight := 1.0
		if hasW {
			var err error
			if weight, err = strconv.ParseFloat(strings.TrimSpace(w), 64); err != nil || math.IsNaN(weight) || math.IsInf(weight, 0) {
				return nil, fmt.Errorf("--reward %q: weight %q of %s is not a finite number", spec, w, name)
			}
		}
		r, err := byName(strings.TrimSpace(name), o)
		if err != nil {
			return nil, fmt.Errorf("--reward %q: %w", spec, err)
		}
		out = append(out, rl.Weighted{Reward: r, Weight: weight})
	}
	return out, nil
}

func byName(name string, o Options) (rl.Reward, error) {
	switch name {
	case "exact":
		return Exact{Field: o.AnswerField}, nil
	case "numeric":
		return Numeric{Field: o.AnswerField}, nil
	case "regex":
		if o.Regex == "" {
			return nil, fmt.Errorf("regex needs a pattern (--reward-regex)")
		}
		return NewRegex(o.Regex, o.AnswerField)
	case "format":
		switch {
		case len(o.JSONKeys) > 0 && o.FormatRegex != "":
			return nil, fmt.Errorf("format takes --format-regex or --format-json-keys, not both")
		case len(o.JSONKeys) > 0:
			return JSONFormat{Keys: o.JSONKeys}, nil
		case o.FormatRegex != "":
			return NewFormat(o.FormatRegex)
		}
		return nil, fmt.Errorf("format needs --format-regex or --format-json-keys")
	case "length":
		if o.TargetLength <= 0 {
			return nil, fmt.Errorf("length needs --target-length > 0")
		}
		return Length{Target: o.TargetLength}, nil
	}
	return nil, fmt.Errorf("unknown reward %q (want one of %s)", name, strings.Join(Names, ", "))
}
