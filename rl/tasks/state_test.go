package tasks

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl"
)

// Each source's saved state, restored into a freshly built source, continues the stream
// exactly where the first left off.
func TestSourceStateRoundTrip(t *testing.T) {
	add, _ := NewAddition(DefaultAdditionConfig())
	cp, _ := NewCopy(DefaultCopyConfig())
	list := func() (Source, error) {
		ps, err := Materialize(add, Train, 7, 3)
		if err != nil {
			return nil, err
		}
		return NewList(ps, true, 5)
	}
	mix := func(shuffle bool) func() (Source, error) {
		return func() (Source, error) {
			m, err := NewMix("addition:3,reverse:1", DefaultOptions())
			if err != nil {
				return nil, err
			}
			return m.Source(Train, shuffle, 9)
		}
	}
	for name, build := range map[string]func() (Source, error){
		"generator": func() (Source, error) { return NewGenerator(cp, Train, 4) },
		"list":      list, "mixer": mix(false), "shuffled mixer": mix(true),
	} {
		t.Run(name, func(t *testing.T) {
			a, err := build()
			if err != nil {
				t.Fatal(err)
			}
			for range 17 { // past an epoch of the list
				if _, err := a.Next(); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := a.(Stateful).SourceState()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := build()
			if err := b.(Stateful).SetSourceState(raw); err != nil {
				t.Fatal(err)
			}
			fresh, _ := build()
			same := true
			for i := range 30 {
				pa, _ := a.Next()
				pb, _ := b.Next()
				pf, _ := fresh.Next()
				if pa.Text != pb.Text {
					t.Fatalf("draw %d after the restore: %q, want %q", i, pb.Text, pa.Text)
				}
				same = same && pa.Text == pf.Text
			}
			if same {
				t.Fatal("the test does not tell a restored source from a fresh one")
			}
		})
	}
}

func TestSourceStateErrors(t *testing.T) {
	add, _ := NewAddition(DefaultAdditionConfig())
	cp, _ := NewCopy(DefaultCopyConfig())
	g, _ := NewGenerator(add, Train, 1)
	raw, _ := g.SourceState()
	other, _ := NewGenerator(cp, Train, 1)
	if err := other.SetSourceState(raw); err == nil || !strings.Contains(err.Error(), "addition") {
		t.Errorf("addition state into a copy generator: %v", err)
	}
	ps, _ := Materialize(add, Train, 4, 1)
	l4, _ := NewList(ps, true, 1)
	l3, _ := NewList(ps[:3], true, 1)
	raw, _ = l4.SourceState()
	if err := l3.SetSourceState(raw); err == nil || !strings.Contains(err.Error(), "4 prompts") {
		t.Errorf("list of 4 into a list of 3: %v", err)
	}
	// A mixer over a source that cannot save its position is not stateful, and neither is the
	// RL adapter around it; over generators both are.
	m, _ := NewMixer([]Source{g, sourceFunc(g.Next)}, []float64{1, 1}, false, 1)
	if _, err := m.SourceState(); err == nil || !strings.Contains(err.Error(), "source 1") {
		t.Errorf("mixer over a plain function: %v", err)
	}
	if _, ok := RLSource(m, nil).(rl.StatefulSource); ok {
		t.Error("RLSource over a mixer of a plain function claims to be stateful")
	}
	if _, ok := RLSource(g, nil).(rl.StatefulSource); !ok {
		t.Error("RLSource over a generator is not stateful")
	}
}

type sourceFunc func() (Prompt, error)

func (f sourceFunc) Next() (Prompt, error) { return f() }
