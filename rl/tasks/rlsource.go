package tasks

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/rl"
)

// EncoderOf adapts a tokenizer's Encode (e.g. nn/gpt2/tokenizer's) to an Encoder.
func EncoderOf(encode func(string) []int32) Encoder {
	return func(s string) ([]int, error) {
		ids := encode(s)
		out := make([]int, len(ids))
		for i, id := range ids {
			out[i] = int(id)
		}
		return out, nil
	}
}

// RL converts the prompt for the rl trainers, with its forced-token template encoded by enc
// (nil when the format fixes no token, or when enc is nil).
func (p Prompt) RL(enc Encoder) (rl.Prompt, error) {
	out := rl.Prompt{Text: p.Text, Answer: p.Answer, Meta: p.Meta, Messages: envMessages(p.Messages),
		Conversation: envMessages(p.Conversation), Tools: p.Tools, Example: p.Row}
	fixed := false
	for _, pc := range p.Format {
		fixed = fixed || pc.Fixed
	}
	if enc == nil || !fixed {
		return out, nil
	}
	tmpl, err := p.Template(enc)
	if err != nil {
		return rl.Prompt{}, err
	}
	out.Template = tmpl
	return out, nil
}

// RLSource adapts a Source to rl.PromptSource, attaching templates encoded by enc. When src
// can save its position (Stateful, a Mixer through all its sources), so can the result (an
// rl.StatefulSource), and a resumed trainer restores it instead of replaying the stream.
func RLSource(src Source, enc Encoder) rl.PromptSource {
	s := rlSource{src: src, enc: enc}
	if stateful(src) {
		return statefulRLSource{s}
	}
	return s
}

// Len is the number of prompts of a fixed set (a dataset's List), 0 for an endless source (an
// rl.SizedSource either way: the trainers report epochs of a fixed set).
func (s rlSource) Len() int {
	if l, ok := s.src.(interface{ Len() int }); ok {
		return l.Len()
	}
	return 0
}

// RLPrompts converts a list of prompts (an evaluation set, say).
func RLPrompts(ps []Prompt, enc Encoder) ([]rl.Prompt, error) {
	out := make([]rl.Prompt, len(ps))
	for i, p := range ps {
		q, err := p.RL(enc)
		if err != nil {
			return nil, err
		}
		out[i] = q
	}
	return out, nil
}

// Options configure the built-in tasks by name.
type Options struct {
	Addition AdditionConfig `json:"addition"`
	Copy     CopyConfig     `json:"copy"`
}

// DefaultOptions are the built-in tasks' defaults.
func DefaultOptions() Options {
	return Options{Addition: DefaultAdditionConfig(), Copy: DefaultCopyConfig()}
}

// BuiltinNames lists the built-in task names.
var BuiltinNames = []string{"addition", "copy", "reverse"}

// Builtin returns the built-in task called name: addition, copy or reverse (the copy task
// with Reverse set).
func Builtin(name string, opt Options) (Task, error) {
	switch name {
	case "addition":
		return NewAddition(opt.Addition)
	case "copy", "reverse":
		c := opt.Copy
		c.Reverse = name == "reverse"
		return NewCopy(c)
	}
	return nil, fmt.Errorf("task %q: want one of %s", name, strings.Join(BuiltinNames, ", "))
}

// MixEntry is one task of a mixture and its weight.
type MixEntry struct {
	Name   string
	Weight float64
}

// ParseMix reads "addition", or "addition:0.8,reverse:0.2" (a missing weight is 1; weights are
// relative). Each name appears once.
func ParseMix(spec string) ([]MixEntry, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("task: empty (want e.g. addition or addition:0.8,reverse:0.2)")
	}
	var out []MixEntry
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		name, w, hasW := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		e := MixEntry{Name: name, Weight: 1}
		if name == "" {
			return nil, fmt.Errorf("task %q: empty task name in %q", part, spec)
		}
		if hasW {
			v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("task %q: weight %q must be a number > 0", name, w)
			}
			e.Weight = v
		}
		if seen[name] {
			return nil, fmt.Errorf("task %q listed twice in %q", name, spec)
		}
		seen[name] = true
		out = append(out, e)
	}
	return out, nil
}

// Mix is a parsed mixture of built-in tasks: the tasks and their weights, from which a run
// takes its prompts (Source: a Mixer over the tasks' generators), its reward and its held-out
// problems. A Mixer draws from any sources by weight; a Mix says which tasks.
type Mix struct {
	Tasks   []Task
	Weights []float64
}

// NewMix builds the tasks of a spec (see ParseMix) with opt.
func NewMix(spec string, opt Options) (*Mix, error) {
	entries, err := ParseMix(spec)
	if err != nil {
		return nil, err
	}
	m := &Mix{}
	for _, e := range entries {
		t, err := Builtin(e.Name, opt)
		if err != nil {
			return nil, err
		}
		m.Tasks = append(m.Tasks, t)
		m.Weights = append(m.Weights, e.Weight)
	}
	return m, nil
}

// Source draws problems of split from the tasks by ratio: each task has its own generator
// seeded from seed, and the mixer interleaves them (shuffle: random picks by weight).
func (m *Mix) Source(split Split, shuffle bool, seed uint64) (Source, error) {
	srcs := make([]Source, len(m.Tasks))
	for i, t := range m.Tasks {
		g, err := NewGenerator(t, split, seed+uint64(i)*0x9e3779b97f4a7c15)
		if err != nil {
			return nil, err
		}
		srcs[i] = g
	}
	if len(srcs) == 1 {
		return srcs[0], nil
	}
	return NewMixer(srcs, m.Weights, shuffle, seed)
}

// Reward scores completions of any of the mixture's tasks by their task's reward.
func (m *Mix) Reward() (*TaskReward, error) { return NewTaskReward(m.Tasks...) }

// HeldOut materialises n distinct test problems per task (seeded), in task order.
func (m *Mix) HeldOut(n int, seed uint64) ([]Prompt, error) {
	var out []Prompt
	for _, t := range m.Tasks {
		ps, err := Materialize(t, Test, n, seed)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}
