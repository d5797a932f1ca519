package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/vkgrad/vkgrad/rl"
)

// Stateful is a Source whose position can be saved in a checkpoint and restored, so a resumed
// run draws exactly the prompts an uninterrupted one would (see rl.StatefulSource). Generator,
// List and Mixer (when all its sources are Stateful) implement it; the state is JSON.
type Stateful interface {
	Source
	SourceState() (json.RawMessage, error)
	SetSourceState(json.RawMessage) error
}

type generatorState struct {
	Task  string   `json:"task"`
	Split Split    `json:"split"`
	RNG   []uint64 `json:"rng"`
}

// SourceState implements Stateful: the generator's RNG.
func (g *Generator) SourceState() (json.RawMessage, error) {
	return json.Marshal(generatorState{Task: g.task.Name(), Split: g.split, RNG: g.r.State()})
}

// SetSourceState implements Stateful.
func (g *Generator) SetSourceState(raw json.RawMessage) error {
	var s generatorState
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s generator state: %w", g.task.Name(), err)
	}
	if s.Task != g.task.Name() || s.Split != g.split {
		return fmt.Errorf("generator state is for task %q (%s split), this generator draws %q (%s split)", s.Task, s.Split, g.task.Name(), g.split)
	}
	if err := g.r.SetState(s.RNG); err != nil {
		return fmt.Errorf("%s generator state: %w", g.task.Name(), err)
	}
	return nil
}

type listState struct {
	Len     int      `json:"len"`
	Shuffle bool     `json:"shuffle"`
	RNG     []uint64 `json:"rng"`
	Order   []int    `json:"order"`
	Pos     int      `json:"pos"`
	Epoch   int      `json:"epoch"`
}

// SourceState implements Stateful: the RNG, this epoch's order and the position in it.
func (l *List) SourceState() (json.RawMessage, error) {
	return json.Marshal(listState{Len: len(l.prompts), Shuffle: l.shuffle, RNG: l.r.State(), Order: l.order, Pos: l.pos, Epoch: l.epoch})
}

// SetSourceState implements Stateful.
func (l *List) SetSourceState(raw json.RawMessage) error {
	var s listState
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("prompt list state: %w", err)
	}
	switch {
	case s.Len != len(l.prompts):
		return fmt.Errorf("prompt list state is for %d prompts, the list has %d", s.Len, len(l.prompts))
	case s.Shuffle != l.shuffle:
		return fmt.Errorf("prompt list state has shuffle %v, the list %v", s.Shuffle, l.shuffle)
	case len(s.Order) != len(l.prompts) || s.Pos < 0 || s.Pos > len(s.Order) || s.Epoch < 0:
		return fmt.Errorf("prompt list state: order of %d at position %d, epoch %d, for %d prompts", len(s.Order), s.Pos, s.Epoch, len(l.prompts))
	}
	seen := make([]bool, len(s.Order))
	for _, i := range s.Order {
		if i < 0 || i >= len(seen) || seen[i] {
			return fmt.Errorf("prompt list state: order is not a permutation of %d prompts", len(seen))
		}
		seen[i] = true
	}
	if err := l.r.SetState(s.RNG); err != nil {
		return fmt.Errorf("prompt list state: %w", err)
	}
	copy(l.order, s.Order)
	l.pos, l.epoch = s.Pos, s.Epoch
	return nil
}

type mixerState struct {
	Weights []float64         `json:"weights"`
	RNG     []uint64          `json:"rng"`
	Current []float64         `json:"current"`
	Counts  []int             `json:"counts"`
	Sources []json.RawMessage `json:"sources"`
}

// SourceState implements Stateful: the mixer's RNG and round-robin credit, and each source's
// state; it fails when a source is not Stateful.
func (m *Mixer) SourceState() (json.RawMessage, error) {
	s := mixerState{Weights: m.weights, RNG: m.r.State(), Current: m.current, Counts: m.counts}
	for i, src := range m.sources {
		st, ok := src.(Stateful)
		if !ok {
			return nil, fmt.Errorf("mixer: source %d (%T) cannot save its position", i, src)
		}
		raw, err := st.SourceState()
		if err != nil {
			return nil, fmt.Errorf("mixer: source %d: %w", i, err)
		}
		s.Sources = append(s.Sources, raw)
	}
	return json.Marshal(s)
}

// SetSourceState implements Stateful.
func (m *Mixer) SetSourceState(raw json.RawMessage) error {
	var s mixerState
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("mixer state: %w", err)
	}
	n := len(m.sources)
	if len(s.Weights) != n || len(s.Current) != n || len(s.Counts) != n || len(s.Sources) != n {
		return fmt.Errorf("mixer state is for %d sources, the mixer has %d", len(s.Weights), n)
	}
	for i, w := range s.Weights {
		if w != m.weights[i] {
			return fmt.Errorf("mixer state: weight %d is %v, the mixer's %v", i, w, m.weights[i])
		}
	}
	if err := m.r.SetState(s.RNG); err != nil {
		return fmt.Errorf("mixer state: %w", err)
	}
	for i, src := range m.sources {
		st, ok := src.(Stateful)
		if !ok {
			return fmt.Errorf("mixer: source %d (%T) cannot restore its position", i, src)
		}
		if err := st.SetSourceState(s.Sources[i]); err != nil {
			return fmt.Errorf("mixer: source %d: %w", i, err)
		}
	}
	copy(m.current, s.Current)
	copy(m.counts, s.Counts)
	return nil
}

// rlSource adapts a Source to rl.PromptSource.
type rlSource struct {
	src Source
	enc Encoder
}

func (s rlSource) Next() (rl.Prompt, error) {
	p, err := s.src.Next()
	if err != nil {
		return rl.Prompt{}, err
	}
	return p.RL(s.enc)
}

// statefulRLSource is an rlSource over a Stateful source; it is an rl.StatefulSource.
type statefulRLSource struct{ rlSource }

func (s statefulRLSource) SourceState() (json.RawMessage, error) {
	return s.src.(Stateful).SourceState()
}

func (s statefulRLSource) SetSourceState(raw json.RawMessage) error {
	return s.src.(Stateful).SetSourceState(raw)
}

// stateful reports whether src (a Mixer through all its sources) can save its position.
func stateful(src Source) bool {
	if m, ok := src.(*Mixer); ok {
		for _, s := range m.sources {
			if !stateful(s) {
				return false
			}
		}
		return true
	}
	_, ok := src.(Stateful)
	return ok
}
