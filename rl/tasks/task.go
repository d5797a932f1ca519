package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl"
)

// Split selects training or held-out problems.
type Split string

// The splits.
const (
	Train Split = "train"
	Test  Split = "test"
)

func (s Split) validate() error {
	if s != Train && s != Test {
		return fmt.Errorf("split %q: want train or test", string(s))
	}
	return nil
}

// Piece is part of a reference completion. Fixed pieces are dictated by the task's format
// (delimiters, markers) and carry no learning signal; the others are the policy's choices.
type Piece struct {
	Text  string
	Fixed bool
}

// Prompt is one problem.
type Prompt struct {
	Task   string  // name of the task that made it
	Text   string  // what the model is given
	Answer string  // the reference completion, without the EOS
	Meta   rl.Meta // what the reward needs; holds "task", and "answer" when there is one
	Format []Piece // Answer split into pieces; nil when the format has no structure
	Where  string  // file:line of a dataset's prompt, for errors; "" for a generated one
	// Messages are the prompt as a conversation when it came as one: the turns Text renders.
	Messages []Message
	// Conversation is a "messages" row's whole conversation when it ends with the assistant
	// turn that is the answer: what supervised training on every assistant turn reads.
	Conversation []Message
	// Tools are the function specs the row offers, OpenAI-wrapped ({"type": "function",
	// "function": {...}}); nil: none.
	Tools []json.RawMessage
	// Row is the dataset row as a compact JSON object with sorted keys (rl.Prompt's
	// Example); nil for a generated prompt.
	Row json.RawMessage
}

// Example is a supervised (SFT) pair. The trainer appends the EOS token after Completion so the
// model learns to stop.
type Example struct {
	Prompt     string
	Completion string
}

// Example returns the prompt's supervised pair.
func (p Prompt) Example() Example { return Example{Prompt: p.Text, Completion: p.Answer} }

// Encoder turns text into token ids (e.g. GPT-2 BPE).
type Encoder func(string) ([]int, error)

// Template returns the forced-token template of the reference completion: the token id at each
// position of a Fixed piece and rl.Unforced elsewhere, for rl.ForcedTemplate. Pieces are encoded
// one by one; it is an error when that differs from encoding the whole answer (a format whose
// pieces merge across boundaries cannot have a position template).
func (p Prompt) Template(enc Encoder) ([]int, error) {
	if len(p.Format) == 0 {
		return nil, nil
	}
	var out, all []int
	var sb strings.Builder
	for _, pc := range p.Format {
		ids, err := enc(pc.Text)
		if err != nil {
			return nil, fmt.Errorf("template of %q: piece %q: %w", p.Text, pc.Text, err)
		}
		for _, id := range ids {
			if pc.Fixed {
				out = append(out, id)
			} else {
				out = append(out, rl.Unforced)
			}
			all = append(all, id)
		}
		sb.WriteString(pc.Text)
	}
	whole, err := enc(sb.String())
	if err != nil {
		return nil, fmt.Errorf("template of %q: %w", p.Text, err)
	}
	if len(whole) != len(all) {
		return nil, fmt.Errorf("template of %q: pieces encode to %d tokens, the whole answer to %d", p.Text, len(all), len(whole))
	}
	for i := range whole {
		if whole[i] != all[i] {
			return nil, fmt.Errorf("template of %q: pieces and whole answer tokenise differently at position %d", p.Text, i)
		}
	}
	return out, nil
}

// Task generates problems of one kind and knows how to score them.
type Task interface {
	Name() string
	// Sample draws one problem of the split using r.
	Sample(r *rng.RNG, split Split) (Prompt, error)
	// Reward scores completions of this task's prompts.
	Reward() rl.Reward
}

// Source yields prompts one at a time.
type Source interface {
	Next() (Prompt, error)
}

// Generator draws an endless stream of problems of one split from a task.
type Generator struct {
	task  Task
	split Split
	r     *rng.RNG
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(t Task, split Split, seed uint64) (*Generator, error) {
	if t == nil {
		return nil, fmt.Errorf("generator: no task")
	}
	if err := split.validate(); err != nil {
		return nil, err
	}
	return &Generator{task: t, split: split, r: rng.New(seed)}, nil
}

// Next implements Source.
func (g *Generator) Next() (Prompt, error) { return g.task.Sample(g.r, g.split) }

// Materialize returns n distinct problems of the split (distinct by prompt text), e.g. a
// fixed held-out evaluation set. It fails when the split has fewer than n problems.
func Materialize(t Task, split Split, n int, seed uint64) ([]Prompt, error) {
	g, err := NewGenerator(t, split, seed)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("materialize %s: n %d: want >= 0", t.Name(), n)
	}
	seen := map[string]bool{}
	out := make([]Prompt, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("materialize %s: found only %d distinct %s problems, want %d", t.Name(), len(out), split, n)
		}
		p, err := g.Next()
		if err != nil {
			return nil, err
		}
		if !seen[p.Text] {
			seen[p.Text] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// List cycles over a fixed list of prompts: in the given order, or, with shuffle, in a fresh
// permutation each epoch drawn from the seed.
type List struct {
	prompts []Prompt
	shuffle bool
	r       *rng.RNG
	order   []int
	pos     int
	epoch   int
}

// NewList returns a source over prompts.
func NewList(prompts []Prompt, shuffle bool, seed uint64) (*List, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("prompt list: empty")
	}
	l := &List{prompts: prompts, shuffle: shuffle, r: rng.New(seed), order: make([]int, len(prompts))}
	l.newEpoch()
	return l, nil
}

func (l *List) newEpoch() {
	for i := range l.order {
		l.order[i] = i
	}
	if l.shuffle {
		l.r.Shuffle(l.order)
	}
	l.pos = 0
}

// Epoch returns the number of completed passes over the list.
func (l *List) Epoch() int { return l.epoch }

// Len is the number of prompts in the list.
func (l *List) Len() int { return len(l.prompts) }

// Next implements Source.
func (l *List) Next() (Prompt, error) {
	if l.pos == len(l.order) {
		l.epoch++
		l.newEpoch()
	}
	p := l.prompts[l.order[l.pos]]
	l.pos++
	return p, nil
}

// Mixer draws from several sources by ratio (e.g. 80/20). Without shuffle it interleaves them
// by smooth weighted round-robin, so every window of sum(weights) draws holds the exact
// proportions; with shuffle each draw picks a source at random by weight from the seed.
type Mixer struct {
	sources []Source
	weights []float64
	total   float64
	shuffle bool
	r       *rng.RNG
	current []float64
	counts  []int
}

// NewMixer validates the sources and weights (positive, finite, one per source).
func NewMixer(sources []Source, weights []float64, shuffle bool, seed uint64) (*Mixer, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("mixer: no sources")
	}
	if len(weights) != len(sources) {
		return nil, fmt.Errorf("mixer: %d weights for %d sources", len(weights), len(sources))
	}
	m := &Mixer{sources: sources, weights: weights, shuffle: shuffle, r: rng.New(seed), current: make([]float64, len(sources)), counts: make([]int, len(sources))}
	for i, w := range weights {
		if sources[i] == nil {
			return nil, fmt.Errorf("mixer: source %d is nil", i)
		}
		if !(w > 0) || w > 1e12 {
			return nil, fmt.Errorf("mixer: weight %d is %v, want a finite value > 0", i, w)
		}
		m.total += w
	}
	return m, nil
}

// Counts returns how many prompts each source has supplied.
func (m *Mixer) Counts() []int { return append([]int(nil), m.counts...) }

// Next implements Source.
func (m *Mixer) Next() (Prompt, error) {
	pick := 0
	if m.shuffle {
		u := m.r.Float64() * m.total
		for pick = 0; pick < len(m.weights)-1; pick++ {
			if u < m.weights[pick] {
				break
			}
			u -= m.weights[pick]
		}
	} else {
		for i, w := range m.weights {
			m.current[i] += w
			if m.current[i] > m.current[pick] {
				pick = i
			}
		}
		m.current[pick] -= m.total
	}
	m.counts[pick]++
	return m.sources[pick].Next()
}

// Batch draws n prompts from src.
func Batch(src Source, n int) ([]Prompt, error) {
	out := make([]Prompt, n)
	for i := range out {
		p, err := src.Next()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// TaskReward routes each completion to the reward of the task named in meta["task"], so a
// mixture of tasks is scored by one reward.
type TaskReward struct {
	byName map[string]rl.Reward
}

// NewTaskReward indexes the tasks' rewards by task name.
func NewTaskReward(ts ...Task) (*TaskReward, error) {
	tr := &TaskReward{byName: map[string]rl.Reward{}}
	for i, t := range ts {
		if t == nil {
			return nil, fmt.Errorf("task reward: task %d is nil", i)
		}
		if _, dup := tr.byName[t.Name()]; dup {
			return nil, fmt.Errorf("task reward: task %q listed twice", t.Name())
		}
		tr.byName[t.Name()] = t.Reward()
	}
	return tr, nil
}

// Name implements rl.Reward.
func (tr *TaskReward) Name() string { return "task" }

// Score implements rl.Reward.
func (tr *TaskReward) Score(prompt, completion string, meta rl.Meta) (float64, error) {
	name, ok := meta["task"]
	if !ok {
		return 0, fmt.Errorf("metadata has no \"task\" field")
	}
	r, ok := tr.byName[name]
	if !ok {
		return 0, fmt.Errorf("no reward for task %q", name)
	}
	s, err := r.Score(prompt, completion, meta)
	if err != nil {
		return 0, fmt.Errorf("task %q: reward %q: %w", name, r.Name(), err)
	}
	return s, nil
}

// Group repeats each prompt g times in a row: the contiguous groups GRPO's advantages expect.
func Group(prompts []Prompt, g int) ([]Prompt, error) {
	if g < 1 {
		return nil, fmt.Errorf("group_size %d: want >= 1", g)
	}
	out := make([]Prompt, 0, len(prompts)*g)
	for _, p := range prompts {
		for j := 0; j < g; j++ {
			out = append(out, p)
		}
	}
	return out, nil
}
